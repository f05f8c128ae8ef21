from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.interruption_body import InterruptionBody
    from ..models.latency_body import LatencyBody
    from ..models.providers_body import ProvidersBody
    from ..models.tool_execution_body import ToolExecutionBody


T = TypeVar("T", bound="TurnBody")


@_attrs_define
class TurnBody:
    """
    Attributes:
        index (int):
        speaker (str): `user` or `agent`.
        text (str):
        start_ms (int): Milliseconds since the session started.
        end_ms (int):
        stt_ms (int): Stage times in ms; 0 where the stage did not run.
        llm_ms (int):
        tts_ms (int):
        interrupted (bool):
        providers (ProvidersBody):
        tool_executions (list[ToolExecutionBody]): Tool calls this agent turn made, in order.
        latency_ms (int | None | Unset): End of caller speech to first agent audio, for agent turns answering the
            caller.
        error (None | str | Unset):
        endpoint (None | str | Unset): Caller turns: how the end of the turn was decided: `vad` (silence), `model` (the
            end-of-turn model judged a pause the end, smart turn detection), `stt` (the
            recogniser's own endpoint), `text` (typed) or `max_length` (30 s without a pause).
        latency (LatencyBody | None | Unset):
        interruption (InterruptionBody | None | Unset):
    """

    index: int
    speaker: str
    text: str
    start_ms: int
    end_ms: int
    stt_ms: int
    llm_ms: int
    tts_ms: int
    interrupted: bool
    providers: ProvidersBody
    tool_executions: list[ToolExecutionBody]
    latency_ms: int | None | Unset = UNSET
    error: None | str | Unset = UNSET
    endpoint: None | str | Unset = UNSET
    latency: LatencyBody | None | Unset = UNSET
    interruption: InterruptionBody | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.interruption_body import InterruptionBody  # noqa: PLC0415
        from ..models.latency_body import LatencyBody  # noqa: PLC0415

        index = self.index

        speaker = self.speaker

        text = self.text

        start_ms = self.start_ms

        end_ms = self.end_ms

        stt_ms = self.stt_ms

        llm_ms = self.llm_ms

        tts_ms = self.tts_ms

        interrupted = self.interrupted

        providers = self.providers.to_dict()

        tool_executions = []
        for tool_executions_item_data in self.tool_executions:
            tool_executions_item = tool_executions_item_data.to_dict()
            tool_executions.append(tool_executions_item)

        latency_ms: int | None | Unset
        if isinstance(self.latency_ms, Unset):
            latency_ms = UNSET
        else:
            latency_ms = self.latency_ms

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        endpoint: None | str | Unset
        if isinstance(self.endpoint, Unset):
            endpoint = UNSET
        else:
            endpoint = self.endpoint

        latency: dict[str, Any] | None | Unset
        if isinstance(self.latency, Unset):
            latency = UNSET
        elif isinstance(self.latency, LatencyBody):
            latency = self.latency.to_dict()
        else:
            latency = self.latency

        interruption: dict[str, Any] | None | Unset
        if isinstance(self.interruption, Unset):
            interruption = UNSET
        elif isinstance(self.interruption, InterruptionBody):
            interruption = self.interruption.to_dict()
        else:
            interruption = self.interruption

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "speaker": speaker,
                "text": text,
                "startMs": start_ms,
                "endMs": end_ms,
                "sttMs": stt_ms,
                "llmMs": llm_ms,
                "ttsMs": tts_ms,
                "interrupted": interrupted,
                "providers": providers,
                "toolExecutions": tool_executions,
            }
        )
        if latency_ms is not UNSET:
            field_dict["latencyMs"] = latency_ms
        if error is not UNSET:
            field_dict["error"] = error
        if endpoint is not UNSET:
            field_dict["endpoint"] = endpoint
        if latency is not UNSET:
            field_dict["latency"] = latency
        if interruption is not UNSET:
            field_dict["interruption"] = interruption

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.interruption_body import InterruptionBody  # noqa: PLC0415
        from ..models.latency_body import LatencyBody  # noqa: PLC0415
        from ..models.providers_body import ProvidersBody  # noqa: PLC0415
        from ..models.tool_execution_body import ToolExecutionBody  # noqa: PLC0415

        d = dict(src_dict)
        index = d.pop("index")

        speaker = d.pop("speaker")

        text = d.pop("text")

        start_ms = d.pop("startMs")

        end_ms = d.pop("endMs")

        stt_ms = d.pop("sttMs")

        llm_ms = d.pop("llmMs")

        tts_ms = d.pop("ttsMs")

        interrupted = d.pop("interrupted")

        providers = ProvidersBody.from_dict(d.pop("providers"))

        tool_executions = []
        _tool_executions = d.pop("toolExecutions")
        for tool_executions_item_data in _tool_executions:
            tool_executions_item = ToolExecutionBody.from_dict(tool_executions_item_data)

            tool_executions.append(tool_executions_item)

        def _parse_latency_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        latency_ms = _parse_latency_ms(d.pop("latencyMs", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint = _parse_endpoint(d.pop("endpoint", UNSET))

        def _parse_latency(data: object) -> LatencyBody | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                latency_type_1 = LatencyBody.from_dict(data)

                return latency_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LatencyBody | None | Unset, data)

        latency = _parse_latency(d.pop("latency", UNSET))

        def _parse_interruption(data: object) -> InterruptionBody | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                interruption_type_1 = InterruptionBody.from_dict(data)

                return interruption_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(InterruptionBody | None | Unset, data)

        interruption = _parse_interruption(d.pop("interruption", UNSET))

        turn_body = cls(
            index=index,
            speaker=speaker,
            text=text,
            start_ms=start_ms,
            end_ms=end_ms,
            stt_ms=stt_ms,
            llm_ms=llm_ms,
            tts_ms=tts_ms,
            interrupted=interrupted,
            providers=providers,
            tool_executions=tool_executions,
            latency_ms=latency_ms,
            error=error,
            endpoint=endpoint,
            latency=latency,
            interruption=interruption,
        )

        turn_body.additional_properties = d
        return turn_body

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
