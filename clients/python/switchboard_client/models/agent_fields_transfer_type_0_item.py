from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.agent_fields_transfer_type_0_item_mode import AgentFieldsTransferType0ItemMode
from ..types import UNSET, Unset

T = TypeVar("T", bound="AgentFieldsTransferType0Item")


@_attrs_define
class AgentFieldsTransferType0Item:
    """
    Attributes:
        name (str):
        number (str): E.164, such as `+14155550100`.
        description (str | Unset):
        mode (AgentFieldsTransferType0ItemMode | Unset): `cold` (the default) redirects the call to the number; `warm`
            holds the caller while the person is told what the call is about, then joins them. Default:
            AgentFieldsTransferType0ItemMode.COLD.
    """

    name: str
    number: str
    description: str | Unset = UNSET
    mode: AgentFieldsTransferType0ItemMode | Unset = AgentFieldsTransferType0ItemMode.COLD
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        number = self.number

        description = self.description

        mode: str | Unset = UNSET
        if not isinstance(self.mode, Unset):
            mode = self.mode.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "number": number,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if mode is not UNSET:
            field_dict["mode"] = mode

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        number = d.pop("number")

        description = d.pop("description", UNSET)

        _mode = d.pop("mode", UNSET)
        mode: AgentFieldsTransferType0ItemMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = AgentFieldsTransferType0ItemMode(_mode)

        agent_fields_transfer_type_0_item = cls(
            name=name,
            number=number,
            description=description,
            mode=mode,
        )

        agent_fields_transfer_type_0_item.additional_properties = d
        return agent_fields_transfer_type_0_item

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
