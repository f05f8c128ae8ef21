from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="RetryBody")


@_attrs_define
class RetryBody:
    """
    Attributes:
        max_attempts (int):
        delay_seconds (int):
        on (list[str]):
    """

    max_attempts: int
    delay_seconds: int
    on: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        max_attempts = self.max_attempts

        delay_seconds = self.delay_seconds

        on = self.on

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "maxAttempts": max_attempts,
                "delaySeconds": delay_seconds,
                "on": on,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        max_attempts = d.pop("maxAttempts")

        delay_seconds = d.pop("delaySeconds")

        on = cast(list[str], d.pop("on"))

        retry_body = cls(
            max_attempts=max_attempts,
            delay_seconds=delay_seconds,
            on=on,
        )

        retry_body.additional_properties = d
        return retry_body

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
