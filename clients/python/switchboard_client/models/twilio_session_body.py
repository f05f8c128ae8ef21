from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.call_answer import CallAnswer
from ..types import UNSET, Unset

T = TypeVar("T", bound="TwilioSessionBody")


@_attrs_define
class TwilioSessionBody:
    """
    Attributes:
        status (CallAnswer): Whether the call is taken.
        twiml (str): Return this to Twilio from your voice webhook, whatever the status.
        session_id (None | str | Unset): The pending session (`connecting` only).
        stream_url (None | str | Unset): `connecting` only.
        expires_at (None | str | Unset): The stream must connect before this time (`connecting` only).
        message (None | str | Unset): Why the call was refused (`busy` only).
    """

    status: CallAnswer
    twiml: str
    session_id: None | str | Unset = UNSET
    stream_url: None | str | Unset = UNSET
    expires_at: None | str | Unset = UNSET
    message: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status.value

        twiml = self.twiml

        session_id: None | str | Unset
        if isinstance(self.session_id, Unset):
            session_id = UNSET
        else:
            session_id = self.session_id

        stream_url: None | str | Unset
        if isinstance(self.stream_url, Unset):
            stream_url = UNSET
        else:
            stream_url = self.stream_url

        expires_at: None | str | Unset
        if isinstance(self.expires_at, Unset):
            expires_at = UNSET
        else:
            expires_at = self.expires_at

        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "twiml": twiml,
            }
        )
        if session_id is not UNSET:
            field_dict["sessionId"] = session_id
        if stream_url is not UNSET:
            field_dict["streamUrl"] = stream_url
        if expires_at is not UNSET:
            field_dict["expiresAt"] = expires_at
        if message is not UNSET:
            field_dict["message"] = message

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = CallAnswer(d.pop("status"))

        twiml = d.pop("twiml")

        def _parse_session_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        session_id = _parse_session_id(d.pop("sessionId", UNSET))

        def _parse_stream_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stream_url = _parse_stream_url(d.pop("streamUrl", UNSET))

        def _parse_expires_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        expires_at = _parse_expires_at(d.pop("expiresAt", UNSET))

        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        twilio_session_body = cls(
            status=status,
            twiml=twiml,
            session_id=session_id,
            stream_url=stream_url,
            expires_at=expires_at,
            message=message,
        )

        twilio_session_body.additional_properties = d
        return twilio_session_body

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
