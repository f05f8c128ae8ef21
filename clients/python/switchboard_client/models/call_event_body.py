from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.call_event_body_detail_type_0 import CallEventBodyDetailType0


T = TypeVar("T", bound="CallEventBody")


@_attrs_define
class CallEventBody:
    """
    Attributes:
        kind (str):
        at_ms (int): When, from the start of the session.
        detail (CallEventBodyDetailType0 | None | Unset): What it was about: `transfer` `{name, number, mode, by,
            outcome}`, `keypad`
            `{digits}`, `machine_detection` `{answeredBy, action, detectionMs}`; absent for the
            others.
    """

    kind: str
    at_ms: int
    detail: CallEventBodyDetailType0 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.call_event_body_detail_type_0 import CallEventBodyDetailType0  # noqa: PLC0415

        kind = self.kind

        at_ms = self.at_ms

        detail: dict[str, Any] | None | Unset
        if isinstance(self.detail, Unset):
            detail = UNSET
        elif isinstance(self.detail, CallEventBodyDetailType0):
            detail = self.detail.to_dict()
        else:
            detail = self.detail

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kind": kind,
                "atMs": at_ms,
            }
        )
        if detail is not UNSET:
            field_dict["detail"] = detail

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.call_event_body_detail_type_0 import CallEventBodyDetailType0  # noqa: PLC0415

        d = dict(src_dict)
        kind = d.pop("kind")

        at_ms = d.pop("atMs")

        def _parse_detail(data: object) -> CallEventBodyDetailType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                detail_type_0 = CallEventBodyDetailType0.from_dict(data)

                return detail_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CallEventBodyDetailType0 | None | Unset, data)

        detail = _parse_detail(d.pop("detail", UNSET))

        call_event_body = cls(
            kind=kind,
            at_ms=at_ms,
            detail=detail,
        )

        call_event_body.additional_properties = d
        return call_event_body

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
