from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.instance_body_variables import InstanceBodyVariables


T = TypeVar("T", bound="InstanceBody")


@_attrs_define
class InstanceBody:
    """
    Attributes:
        id (str):
        agent_id (str):
        context (str): Text added to the agent's system prompt for this instance.
        variables (InstanceBodyVariables): Values substituted for `{{name}}` in the agent's systemPrompt and
            firstMessage.
        created_at (str):
        updated_at (str):
        name (None | str | Unset):
        phone_number (None | str | Unset): E.164, e.g. `+14155550123`.
    """

    id: str
    agent_id: str
    context: str
    variables: InstanceBodyVariables
    created_at: str
    updated_at: str
    name: None | str | Unset = UNSET
    phone_number: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        agent_id = self.agent_id

        context = self.context

        variables = self.variables.to_dict()

        created_at = self.created_at

        updated_at = self.updated_at

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        phone_number: None | str | Unset
        if isinstance(self.phone_number, Unset):
            phone_number = UNSET
        else:
            phone_number = self.phone_number

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "agentId": agent_id,
                "context": context,
                "variables": variables,
                "createdAt": created_at,
                "updatedAt": updated_at,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if phone_number is not UNSET:
            field_dict["phoneNumber"] = phone_number

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.instance_body_variables import InstanceBodyVariables  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        agent_id = d.pop("agentId")

        context = d.pop("context")

        variables = InstanceBodyVariables.from_dict(d.pop("variables"))

        created_at = d.pop("createdAt")

        updated_at = d.pop("updatedAt")

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_phone_number(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        phone_number = _parse_phone_number(d.pop("phoneNumber", UNSET))

        instance_body = cls(
            id=id,
            agent_id=agent_id,
            context=context,
            variables=variables,
            created_at=created_at,
            updated_at=updated_at,
            name=name,
            phone_number=phone_number,
        )

        instance_body.additional_properties = d
        return instance_body

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
