from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.transfer_target_mode import TransferTargetMode

T = TypeVar("T", bound="TransferTarget")


@_attrs_define
class TransferTarget:
    """A person an agent may hand a phone call to.

    Attributes:
        name (str): How the agent names them (`billing`, `Dr. Lee`): 1-64 characters, unique within the
            agent (case aside).
        number (str): E.164, such as `+14155550100`.
        description (str): When to hand the call to them, for the agent's language model: up to 500 characters,
            default empty.
        mode (TransferTargetMode): `cold` (the default) redirects the call to the number; `warm` holds the caller while
            the person is told what the call is about, then joins them. Default: TransferTargetMode.COLD.
    """

    name: str
    number: str
    description: str
    mode: TransferTargetMode = TransferTargetMode.COLD
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        number = self.number

        description = self.description

        mode = self.mode.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "number": number,
                "description": description,
                "mode": mode,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        number = d.pop("number")

        description = d.pop("description")

        mode = TransferTargetMode(d.pop("mode"))

        transfer_target = cls(
            name=name,
            number=number,
            description=description,
            mode=mode,
        )

        transfer_target.additional_properties = d
        return transfer_target

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
