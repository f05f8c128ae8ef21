from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="TaskBody")


@_attrs_define
class TaskBody:
    """An outbound call task.

    Attributes:
        task_id (str):
        agent_id (str):
        to (str):
        from_ (str):
        status (str): queued, ringing, in-progress, completed, busy, no-answer, failed or canceled.
        machine_detection (str): `off`, `hangup` or `message`, as the call was placed.
        created_at (str):
        updated_at (str):
        instance_id (None | str | Unset):
        call_sid (None | str | Unset):
        session_id (None | str | Unset): The session the call connected to, once answered.
        duration_seconds (int | None | Unset): Twilio's `CallDuration` once the call ended.
        error (None | str | Unset): Why the call could not be placed.
        answered_by (None | str | Unset): Twilio's answering-machine verdict (`human`, `machine_start`,
            `machine_end_beep`,
            `machine_end_silence`, `machine_end_other`, `fax`, `unknown`); null until known.
        machine_action (None | str | Unset): What was done about the verdict: `none` (the agent went on), `hung_up` or
            `left_message`; null until known.
    """

    task_id: str
    agent_id: str
    to: str
    from_: str
    status: str
    machine_detection: str
    created_at: str
    updated_at: str
    instance_id: None | str | Unset = UNSET
    call_sid: None | str | Unset = UNSET
    session_id: None | str | Unset = UNSET
    duration_seconds: int | None | Unset = UNSET
    error: None | str | Unset = UNSET
    answered_by: None | str | Unset = UNSET
    machine_action: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        task_id = self.task_id

        agent_id = self.agent_id

        to = self.to

        from_ = self.from_

        status = self.status

        machine_detection = self.machine_detection

        created_at = self.created_at

        updated_at = self.updated_at

        instance_id: None | str | Unset
        if isinstance(self.instance_id, Unset):
            instance_id = UNSET
        else:
            instance_id = self.instance_id

        call_sid: None | str | Unset
        if isinstance(self.call_sid, Unset):
            call_sid = UNSET
        else:
            call_sid = self.call_sid

        session_id: None | str | Unset
        if isinstance(self.session_id, Unset):
            session_id = UNSET
        else:
            session_id = self.session_id

        duration_seconds: int | None | Unset
        if isinstance(self.duration_seconds, Unset):
            duration_seconds = UNSET
        else:
            duration_seconds = self.duration_seconds

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        answered_by: None | str | Unset
        if isinstance(self.answered_by, Unset):
            answered_by = UNSET
        else:
            answered_by = self.answered_by

        machine_action: None | str | Unset
        if isinstance(self.machine_action, Unset):
            machine_action = UNSET
        else:
            machine_action = self.machine_action

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "taskId": task_id,
                "agentId": agent_id,
                "to": to,
                "from": from_,
                "status": status,
                "machineDetection": machine_detection,
                "createdAt": created_at,
                "updatedAt": updated_at,
            }
        )
        if instance_id is not UNSET:
            field_dict["instanceId"] = instance_id
        if call_sid is not UNSET:
            field_dict["callSid"] = call_sid
        if session_id is not UNSET:
            field_dict["sessionId"] = session_id
        if duration_seconds is not UNSET:
            field_dict["durationSeconds"] = duration_seconds
        if error is not UNSET:
            field_dict["error"] = error
        if answered_by is not UNSET:
            field_dict["answeredBy"] = answered_by
        if machine_action is not UNSET:
            field_dict["machineAction"] = machine_action

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        task_id = d.pop("taskId")

        agent_id = d.pop("agentId")

        to = d.pop("to")

        from_ = d.pop("from")

        status = d.pop("status")

        machine_detection = d.pop("machineDetection")

        created_at = d.pop("createdAt")

        updated_at = d.pop("updatedAt")

        def _parse_instance_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_id = _parse_instance_id(d.pop("instanceId", UNSET))

        def _parse_call_sid(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        call_sid = _parse_call_sid(d.pop("callSid", UNSET))

        def _parse_session_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        session_id = _parse_session_id(d.pop("sessionId", UNSET))

        def _parse_duration_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_seconds = _parse_duration_seconds(d.pop("durationSeconds", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_answered_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        answered_by = _parse_answered_by(d.pop("answeredBy", UNSET))

        def _parse_machine_action(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        machine_action = _parse_machine_action(d.pop("machineAction", UNSET))

        task_body = cls(
            task_id=task_id,
            agent_id=agent_id,
            to=to,
            from_=from_,
            status=status,
            machine_detection=machine_detection,
            created_at=created_at,
            updated_at=updated_at,
            instance_id=instance_id,
            call_sid=call_sid,
            session_id=session_id,
            duration_seconds=duration_seconds,
            error=error,
            answered_by=answered_by,
            machine_action=machine_action,
        )

        task_body.additional_properties = d
        return task_body

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
