from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PhoneNumberFields")


@_attrs_define
class PhoneNumberFields:
    """A route's fields; on update, absent fields stay and `null` clears a nullable one.

    Attributes:
        phone_number (None | str | Unset): E.164: `+` and 2-15 digits. Required on create; one route per number per
            developer
            (409); cannot be changed on update (400).
        agent_id (None | str | Unset): One of your agents. Required on create.
        instance_id (None | str | Unset): An instance of that agent; otherwise the instance whose phoneNumber is the
            caller's.
        name (None | str | Unset): Up to 100 characters.
    """

    phone_number: None | str | Unset = UNSET
    agent_id: None | str | Unset = UNSET
    instance_id: None | str | Unset = UNSET
    name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        phone_number: None | str | Unset
        if isinstance(self.phone_number, Unset):
            phone_number = UNSET
        else:
            phone_number = self.phone_number

        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        else:
            agent_id = self.agent_id

        instance_id: None | str | Unset
        if isinstance(self.instance_id, Unset):
            instance_id = UNSET
        else:
            instance_id = self.instance_id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if phone_number is not UNSET:
            field_dict["phoneNumber"] = phone_number
        if agent_id is not UNSET:
            field_dict["agentId"] = agent_id
        if instance_id is not UNSET:
            field_dict["instanceId"] = instance_id
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_phone_number(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        phone_number = _parse_phone_number(d.pop("phoneNumber", UNSET))

        def _parse_agent_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent_id = _parse_agent_id(d.pop("agentId", UNSET))

        def _parse_instance_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_id = _parse_instance_id(d.pop("instanceId", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        phone_number_fields = cls(
            phone_number=phone_number,
            agent_id=agent_id,
            instance_id=instance_id,
            name=name,
        )

        return phone_number_fields
