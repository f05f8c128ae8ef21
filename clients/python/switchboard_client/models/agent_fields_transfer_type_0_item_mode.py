from enum import StrEnum


class AgentFieldsTransferType0ItemMode(StrEnum):
    COLD = "cold"
    WARM = "warm"

    def __str__(self) -> str:
        return str(self.value)
