from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.machine_detection import MachineDetection
from ..types import UNSET, Unset

T = TypeVar("T", bound="OutboundRequest")


@_attrs_define
class OutboundRequest:
    """
    Attributes:
        agent_id (None | str | Unset): The agent that talks on the call.
        to (None | str | Unset): The number to call, E.164; premium-rate and other costly destinations are refused
            (`telephony.outbound` prefix lists).
        from_ (None | str | Unset): The caller id, E.164: one of your verified numbers in `/v1/phone-numbers`.
        instance_id (None | str | Unset): An instance of the agent; otherwise the instance whose phoneNumber is `to`, if
            any.
        record (bool | None | Unset): Also have Twilio record the call on its side (`Record=true`; default false). Our
            own
            two-channel recording is made either way (see `/v1/recordings/{callId}`).
        machine_detection (MachineDetection | None | Unset):
        voicemail_message (None | str | Unset): The message left on a machine: required when `machineDetection` is
            `message`, refused
            otherwise; not blank, at most 1000 characters. Example: Hi, this is Acme about your order. Please call us back..
    """

    agent_id: None | str | Unset = UNSET
    to: None | str | Unset = UNSET
    from_: None | str | Unset = UNSET
    instance_id: None | str | Unset = UNSET
    record: bool | None | Unset = UNSET
    machine_detection: MachineDetection | None | Unset = UNSET
    voicemail_message: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        else:
            agent_id = self.agent_id

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        instance_id: None | str | Unset
        if isinstance(self.instance_id, Unset):
            instance_id = UNSET
        else:
            instance_id = self.instance_id

        record: bool | None | Unset
        if isinstance(self.record, Unset):
            record = UNSET
        else:
            record = self.record

        machine_detection: None | str | Unset
        if isinstance(self.machine_detection, Unset):
            machine_detection = UNSET
        elif isinstance(self.machine_detection, MachineDetection):
            machine_detection = self.machine_detection.value
        else:
            machine_detection = self.machine_detection

        voicemail_message: None | str | Unset
        if isinstance(self.voicemail_message, Unset):
            voicemail_message = UNSET
        else:
            voicemail_message = self.voicemail_message

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if agent_id is not UNSET:
            field_dict["agentId"] = agent_id
        if to is not UNSET:
            field_dict["to"] = to
        if from_ is not UNSET:
            field_dict["from"] = from_
        if instance_id is not UNSET:
            field_dict["instanceId"] = instance_id
        if record is not UNSET:
            field_dict["record"] = record
        if machine_detection is not UNSET:
            field_dict["machineDetection"] = machine_detection
        if voicemail_message is not UNSET:
            field_dict["voicemailMessage"] = voicemail_message

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_agent_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent_id = _parse_agent_id(d.pop("agentId", UNSET))

        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_instance_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_id = _parse_instance_id(d.pop("instanceId", UNSET))

        def _parse_record(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        record = _parse_record(d.pop("record", UNSET))

        def _parse_machine_detection(data: object) -> MachineDetection | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                machine_detection_type_1 = MachineDetection(data)

                return machine_detection_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MachineDetection | None | Unset, data)

        machine_detection = _parse_machine_detection(d.pop("machineDetection", UNSET))

        def _parse_voicemail_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        voicemail_message = _parse_voicemail_message(d.pop("voicemailMessage", UNSET))

        outbound_request = cls(
            agent_id=agent_id,
            to=to,
            from_=from_,
            instance_id=instance_id,
            record=record,
            machine_detection=machine_detection,
            voicemail_message=voicemail_message,
        )

        return outbound_request
