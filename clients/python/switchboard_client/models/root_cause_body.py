from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.issue import Issue


T = TypeVar("T", bound="RootCauseBody")


@_attrs_define
class RootCauseBody:
    """
    Attributes:
        session_id (str):
        issues (list[Issue]): Findings, ordered by turn; empty when nothing went wrong.
        call_sid (None | str | Unset): The telephony provider's call id, for phone sessions.
    """

    session_id: str
    issues: list[Issue]
    call_sid: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        session_id = self.session_id

        issues = []
        for issues_item_data in self.issues:
            issues_item = issues_item_data.to_dict()
            issues.append(issues_item)

        call_sid: None | str | Unset
        if isinstance(self.call_sid, Unset):
            call_sid = UNSET
        else:
            call_sid = self.call_sid

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sessionId": session_id,
                "issues": issues,
            }
        )
        if call_sid is not UNSET:
            field_dict["callSid"] = call_sid

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.issue import Issue  # noqa: PLC0415

        d = dict(src_dict)
        session_id = d.pop("sessionId")

        issues = []
        _issues = d.pop("issues")
        for issues_item_data in _issues:
            issues_item = Issue.from_dict(issues_item_data)

            issues.append(issues_item)

        def _parse_call_sid(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        call_sid = _parse_call_sid(d.pop("callSid", UNSET))

        root_cause_body = cls(
            session_id=session_id,
            issues=issues,
            call_sid=call_sid,
        )

        root_cause_body.additional_properties = d
        return root_cause_body

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
