from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="HangUpBody")


@_attrs_define
class HangUpBody:
    """
    Attributes:
        call_sid (str):
        session_id (str):
        status (str): `completed`: Twilio ended the call now. `already_ended`: Twilio had no call in progress
            any more (it ended as the request was made).
    """

    call_sid: str
    session_id: str
    status: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        call_sid = self.call_sid

        session_id = self.session_id

        status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "callSid": call_sid,
                "sessionId": session_id,
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        call_sid = d.pop("callSid")

        session_id = d.pop("sessionId")

        status = d.pop("status")

        hang_up_body = cls(
            call_sid=call_sid,
            session_id=session_id,
            status=status,
        )

        hang_up_body.additional_properties = d
        return hang_up_body

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
