from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.call_analysis import CallAnalysis
    from ..models.call_event_body import CallEventBody
    from ..models.error_entry import ErrorEntry
    from ..models.metrics_body import MetricsBody
    from ..models.turn_body import TurnBody
    from ..models.unrecognised_speech_body import UnrecognisedSpeechBody


T = TypeVar("T", bound="SessionDetailBody")


@_attrs_define
class SessionDetailBody:
    """
    Attributes:
        id (str):
        agent_id (str):
        transport (str):
        status (str):
        turns (list[TurnBody]):
        errors (list[ErrorEntry]): Failed turns and a fatal end, in order.
        unrecognised_speech (list[UnrecognisedSpeechBody]):
        call_events (list[CallEventBody]): What was done to the call beyond the conversation, in order:
            `hangup_requested` (the
            integrator hung it up), `agent_hung_up` (the agent's `end_call`), `transfer`, `keypad`
            (the agent's `send_dtmf`), `machine_detection` (an outbound call's answering-machine
            verdict).
        metrics (MetricsBody):
        call_sid (None | str | Unset):
        from_ (None | str | Unset):
        to (None | str | Unset):
        end_reason (None | str | Unset): `hangup`, `transport_closed`, `idle_timeout`, `agent_ended` (the agent's
            `end_conversation` or `end_call`), `transferred` (handed to a person), `redirected` (keys pressed; the call goes
            on in a new session), `shutdown`, or the error that ended the session.
        started_at (None | str | Unset):
        ended_at (None | str | Unset):
        analysis (CallAnalysis | None | Unset):
    """

    id: str
    agent_id: str
    transport: str
    status: str
    turns: list[TurnBody]
    errors: list[ErrorEntry]
    unrecognised_speech: list[UnrecognisedSpeechBody]
    call_events: list[CallEventBody]
    metrics: MetricsBody
    call_sid: None | str | Unset = UNSET
    from_: None | str | Unset = UNSET
    to: None | str | Unset = UNSET
    end_reason: None | str | Unset = UNSET
    started_at: None | str | Unset = UNSET
    ended_at: None | str | Unset = UNSET
    analysis: CallAnalysis | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.call_analysis import CallAnalysis  # noqa: PLC0415

        id = self.id

        agent_id = self.agent_id

        transport = self.transport

        status = self.status

        turns = []
        for turns_item_data in self.turns:
            turns_item = turns_item_data.to_dict()
            turns.append(turns_item)

        errors = []
        for errors_item_data in self.errors:
            errors_item = errors_item_data.to_dict()
            errors.append(errors_item)

        unrecognised_speech = []
        for unrecognised_speech_item_data in self.unrecognised_speech:
            unrecognised_speech_item = unrecognised_speech_item_data.to_dict()
            unrecognised_speech.append(unrecognised_speech_item)

        call_events = []
        for call_events_item_data in self.call_events:
            call_events_item = call_events_item_data.to_dict()
            call_events.append(call_events_item)

        metrics = self.metrics.to_dict()

        call_sid: None | str | Unset
        if isinstance(self.call_sid, Unset):
            call_sid = UNSET
        else:
            call_sid = self.call_sid

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        else:
            to = self.to

        end_reason: None | str | Unset
        if isinstance(self.end_reason, Unset):
            end_reason = UNSET
        else:
            end_reason = self.end_reason

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

        analysis: dict[str, Any] | None | Unset
        if isinstance(self.analysis, Unset):
            analysis = UNSET
        elif isinstance(self.analysis, CallAnalysis):
            analysis = self.analysis.to_dict()
        else:
            analysis = self.analysis

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "agentId": agent_id,
                "transport": transport,
                "status": status,
                "turns": turns,
                "errors": errors,
                "unrecognisedSpeech": unrecognised_speech,
                "callEvents": call_events,
                "metrics": metrics,
            }
        )
        if call_sid is not UNSET:
            field_dict["callSid"] = call_sid
        if from_ is not UNSET:
            field_dict["from"] = from_
        if to is not UNSET:
            field_dict["to"] = to
        if end_reason is not UNSET:
            field_dict["endReason"] = end_reason
        if started_at is not UNSET:
            field_dict["startedAt"] = started_at
        if ended_at is not UNSET:
            field_dict["endedAt"] = ended_at
        if analysis is not UNSET:
            field_dict["analysis"] = analysis

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.call_analysis import CallAnalysis  # noqa: PLC0415
        from ..models.call_event_body import CallEventBody  # noqa: PLC0415
        from ..models.error_entry import ErrorEntry  # noqa: PLC0415
        from ..models.metrics_body import MetricsBody  # noqa: PLC0415
        from ..models.turn_body import TurnBody  # noqa: PLC0415
        from ..models.unrecognised_speech_body import UnrecognisedSpeechBody  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        agent_id = d.pop("agentId")

        transport = d.pop("transport")

        status = d.pop("status")

        turns = []
        _turns = d.pop("turns")
        for turns_item_data in _turns:
            turns_item = TurnBody.from_dict(turns_item_data)

            turns.append(turns_item)

        errors = []
        _errors = d.pop("errors")
        for errors_item_data in _errors:
            errors_item = ErrorEntry.from_dict(errors_item_data)

            errors.append(errors_item)

        unrecognised_speech = []
        _unrecognised_speech = d.pop("unrecognisedSpeech")
        for unrecognised_speech_item_data in _unrecognised_speech:
            unrecognised_speech_item = UnrecognisedSpeechBody.from_dict(unrecognised_speech_item_data)

            unrecognised_speech.append(unrecognised_speech_item)

        call_events = []
        _call_events = d.pop("callEvents")
        for call_events_item_data in _call_events:
            call_events_item = CallEventBody.from_dict(call_events_item_data)

            call_events.append(call_events_item)

        metrics = MetricsBody.from_dict(d.pop("metrics"))

        def _parse_call_sid(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        call_sid = _parse_call_sid(d.pop("callSid", UNSET))

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_end_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        end_reason = _parse_end_reason(d.pop("endReason", UNSET))

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

        def _parse_analysis(data: object) -> CallAnalysis | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                analysis_type_1 = CallAnalysis.from_dict(data)

                return analysis_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CallAnalysis | None | Unset, data)

        analysis = _parse_analysis(d.pop("analysis", UNSET))

        session_detail_body = cls(
            id=id,
            agent_id=agent_id,
            transport=transport,
            status=status,
            turns=turns,
            errors=errors,
            unrecognised_speech=unrecognised_speech,
            call_events=call_events,
            metrics=metrics,
            call_sid=call_sid,
            from_=from_,
            to=to,
            end_reason=end_reason,
            started_at=started_at,
            ended_at=ended_at,
            analysis=analysis,
        )

        session_detail_body.additional_properties = d
        return session_detail_body

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
