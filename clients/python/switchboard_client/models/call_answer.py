from enum import StrEnum


class CallAnswer(StrEnum):
    BUSY = "busy"
    CONNECTING = "connecting"

    def __str__(self) -> str:
        return str(self.value)
