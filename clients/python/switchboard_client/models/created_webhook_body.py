from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="CreatedWebhookBody")


@_attrs_define
class CreatedWebhookBody:
    """A new endpoint, with its signing secret: shown here only.

    Attributes:
        id (str):
        url (str):
        events (list[str]):
        secret (str): `whsec_…`: keys the HMAC-SHA256 of each delivery's `Switchboard-Signature`. Shown once.
        created_at (str):
    """

    id: str
    url: str
    events: list[str]
    secret: str
    created_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        url = self.url

        events = self.events

        secret = self.secret

        created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "url": url,
                "events": events,
                "secret": secret,
                "createdAt": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        url = d.pop("url")

        events = cast(list[str], d.pop("events"))

        secret = d.pop("secret")

        created_at = d.pop("createdAt")

        created_webhook_body = cls(
            id=id,
            url=url,
            events=events,
            secret=secret,
            created_at=created_at,
        )

        created_webhook_body.additional_properties = d
        return created_webhook_body

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
