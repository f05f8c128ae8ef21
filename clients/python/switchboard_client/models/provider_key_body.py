from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ProviderKeyBody")


@_attrs_define
class ProviderKeyBody:
    """A stored key as the API shows it: never the key itself.

    Attributes:
        provider (str):
        key_hint (str): The key's last four characters (never more than a third of a short key).
        created_at (str):
        last_verified_at (None | str | Unset): When a verify call last succeeded; null until then (and after the key is
            replaced).
    """

    provider: str
    key_hint: str
    created_at: str
    last_verified_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        provider = self.provider

        key_hint = self.key_hint

        created_at = self.created_at

        last_verified_at: None | str | Unset
        if isinstance(self.last_verified_at, Unset):
            last_verified_at = UNSET
        else:
            last_verified_at = self.last_verified_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "provider": provider,
                "keyHint": key_hint,
                "createdAt": created_at,
            }
        )
        if last_verified_at is not UNSET:
            field_dict["lastVerifiedAt"] = last_verified_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        provider = d.pop("provider")

        key_hint = d.pop("keyHint")

        created_at = d.pop("createdAt")

        def _parse_last_verified_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_verified_at = _parse_last_verified_at(d.pop("lastVerifiedAt", UNSET))

        provider_key_body = cls(
            provider=provider,
            key_hint=key_hint,
            created_at=created_at,
            last_verified_at=last_verified_at,
        )

        provider_key_body.additional_properties = d
        return provider_key_body

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
