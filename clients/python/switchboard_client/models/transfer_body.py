from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TransferBody")


@_attrs_define
class TransferBody:
    """
    Attributes:
        call_sid (str):
        session_id (str):
        status (str): `dialing` (cold: Twilio is ringing the person) or `calling` (warm: the caller is on
            hold while the person's phone rings). The outcome lands on the session's `transfer`
            call event.
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

        transfer_body = cls(
            call_sid=call_sid,
            session_id=session_id,
            status=status,
        )

        transfer_body.additional_properties = d
        return transfer_body

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
