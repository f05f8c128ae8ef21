from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="IssuedKeyBody")


@_attrs_define
class IssuedKeyBody:
    """A newly issued key: the only response that carries the raw key.

    Attributes:
        id (str):
        key (str): The raw key, shown once.
        name (str):
        prefix (str):
        created_at (str):
        message (str):
        expires_at (None | str | Unset):
    """

    id: str
    key: str
    name: str
    prefix: str
    created_at: str
    message: str
    expires_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        key = self.key

        name = self.name

        prefix = self.prefix

        created_at = self.created_at

        message = self.message

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        else:
            expires_at = self.expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "key": key,
                "name": name,
                "prefix": prefix,
                "createdAt": created_at,
                "message": message,
            }
        )
        if expires_at is not UNSET:
            field_dict["expiresAt"] = expires_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        key = d.pop("key")

        name = d.pop("name")

        prefix = d.pop("prefix")

        created_at = d.pop("createdAt")

        message = d.pop("message")

        def _parse_expires_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        expires_at = _parse_expires_at(d.pop("expiresAt", UNSET))

        issued_key_body = cls(
            id=id,
            key=key,
            name=name,
            prefix=prefix,
            created_at=created_at,
            message=message,
            expires_at=expires_at,
        )

        issued_key_body.additional_properties = d
        return issued_key_body

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
