from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="PhoneNumberBody")


@_attrs_define
class PhoneNumberBody:
    """
    Attributes:
        id (str):
        phone_number (str): E.164, e.g. `+14155550123`.
        agent_id (str):
        verified (bool): True once the code texted to the number was confirmed; until then the route takes no
            calls and the number is no outbound caller id.
        created_at (str):
        updated_at (str):
        instance_id (None | str | Unset):
        name (None | str | Unset):
        verified_at (None | str | Unset):
        code_expires_at (None | str | Unset): While pending: when the code texted to the number expires.
    """

    id: str
    phone_number: str
    agent_id: str
    verified: bool
    created_at: str
    updated_at: str
    instance_id: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    verified_at: None | str | Unset = UNSET
    code_expires_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        phone_number = self.phone_number

        agent_id = self.agent_id

        verified = self.verified

        created_at = self.created_at

        updated_at = self.updated_at

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

        verified_at: None | str | Unset
        if isinstance(self.verified_at, Unset):
            verified_at = UNSET
        else:
            verified_at = self.verified_at

        code_expires_at: None | str | Unset
        if isinstance(self.code_expires_at, Unset):
            code_expires_at = UNSET
        else:
            code_expires_at = self.code_expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "phoneNumber": phone_number,
                "agentId": agent_id,
                "verified": verified,
                "createdAt": created_at,
                "updatedAt": updated_at,
            }
        )
        if instance_id is not UNSET:
            field_dict["instanceId"] = instance_id
        if name is not UNSET:
            field_dict["name"] = name
        if verified_at is not UNSET:
            field_dict["verifiedAt"] = verified_at
        if code_expires_at is not UNSET:
            field_dict["codeExpiresAt"] = code_expires_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        phone_number = d.pop("phoneNumber")

        agent_id = d.pop("agentId")

        verified = d.pop("verified")

        created_at = d.pop("createdAt")

        updated_at = d.pop("updatedAt")

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

        def _parse_verified_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        verified_at = _parse_verified_at(d.pop("verifiedAt", UNSET))

        def _parse_code_expires_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        code_expires_at = _parse_code_expires_at(d.pop("codeExpiresAt", UNSET))

        phone_number_body = cls(
            id=id,
            phone_number=phone_number,
            agent_id=agent_id,
            verified=verified,
            created_at=created_at,
            updated_at=updated_at,
            instance_id=instance_id,
            name=name,
            verified_at=verified_at,
            code_expires_at=code_expires_at,
        )

        phone_number_body.additional_properties = d
        return phone_number_body

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
