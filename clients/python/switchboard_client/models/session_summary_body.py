from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SessionSummaryBody")


@_attrs_define
class SessionSummaryBody:
    """
    Attributes:
        id (str):
        agent_id (str):
        transport (str): `twilio` or `direct`.
        turns (int): Number of turns (caller and agent).
        status (str): `active`, `completed` or `failed`.
        call_sid (None | str | Unset):
        started_at (None | str | Unset):
        ended_at (None | str | Unset):
    """

    id: str
    agent_id: str
    transport: str
    turns: int
    status: str
    call_sid: None | str | Unset = UNSET
    started_at: None | str | Unset = UNSET
    ended_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        agent_id = self.agent_id

        transport = self.transport

        turns = self.turns

        status = self.status

        call_sid: None | str | Unset
        if isinstance(self.call_sid, Unset):
            call_sid = UNSET
        else:
            call_sid = self.call_sid

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        else:
            started_at = self.started_at

        ended_at: None | str | Unset
        if isinstance(self.ended_at, Unset):
            ended_at = UNSET
        else:
            ended_at = self.ended_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "agentId": agent_id,
                "transport": transport,
                "turns": turns,
                "status": status,
            }
        )
        if call_sid is not UNSET:
            field_dict["callSid"] = call_sid
        if started_at is not UNSET:
            field_dict["startedAt"] = started_at
        if ended_at is not UNSET:
            field_dict["endedAt"] = ended_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        agent_id = d.pop("agentId")

        transport = d.pop("transport")

        turns = d.pop("turns")

        status = d.pop("status")

        def _parse_call_sid(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        call_sid = _parse_call_sid(d.pop("callSid", UNSET))

        def _parse_started_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started_at = _parse_started_at(d.pop("startedAt", UNSET))

        def _parse_ended_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ended_at = _parse_ended_at(d.pop("endedAt", UNSET))

        session_summary_body = cls(
            id=id,
            agent_id=agent_id,
            transport=transport,
            turns=turns,
            status=status,
            call_sid=call_sid,
            started_at=started_at,
            ended_at=ended_at,
        )

        session_summary_body.additional_properties = d
        return session_summary_body

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
