from enum import StrEnum


class MachineDetection(StrEnum):
    HANGUP = "hangup"
    MESSAGE = "message"
    OFF = "off"

    def __str__(self) -> str:
        return str(self.value)
