from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetryRequest")


@_attrs_define
class RetryRequest:
    """When a call nobody took is tried again.

    Attributes:
        max_attempts (int | None | Unset): Calls placed to one contact at most, 1-10 (default 2).
        delay_seconds (int | None | Unset): The wait before the next call, 1-86400 seconds (default 300).
        on (list[str] | None | Unset): The outcomes tried again, of `no-answer`, `busy`, `failed` (default `["no-
            answer",
            "busy"]`).
    """

    max_attempts: int | None | Unset = UNSET
    delay_seconds: int | None | Unset = UNSET
    on: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_attempts: int | None | Unset
        if isinstance(self.max_attempts, Unset):
            max_attempts = UNSET
        else:
            max_attempts = self.max_attempts

        delay_seconds: int | None | Unset
        if isinstance(self.delay_seconds, Unset):
            delay_seconds = UNSET
        else:
            delay_seconds = self.delay_seconds

        on: list[str] | None | Unset
        if isinstance(self.on, Unset):
            on = UNSET
        elif isinstance(self.on, list):
            on = self.on

        else:
            on = self.on

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_attempts is not UNSET:
            field_dict["maxAttempts"] = max_attempts
        if delay_seconds is not UNSET:
            field_dict["delaySeconds"] = delay_seconds
        if on is not UNSET:
            field_dict["on"] = on

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_max_attempts(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_attempts = _parse_max_attempts(d.pop("maxAttempts", UNSET))

        def _parse_delay_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delay_seconds = _parse_delay_seconds(d.pop("delaySeconds", UNSET))

        def _parse_on(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                on_type_0 = cast(list[str], data)

                return on_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        on = _parse_on(d.pop("on", UNSET))

        retry_request = cls(
            max_attempts=max_attempts,
            delay_seconds=delay_seconds,
            on=on,
        )

        return retry_request
