from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="LatencyBody")


@_attrs_define
class LatencyBody:
    """An agent reply's latency, end of caller speech → first agent audio, by stage (ms).

    Attributes:
        total_ms (int):
        endpoint_ms (int): Waiting for the end of the caller's turn (silence, or the recogniser's endpoint).
        stt_ms (int):
        llm_ms (int): Model time to the first speakable sentence, over all rounds.
        tool_ms (int):
        tts_ms (int): First sentence to its first audio.
        platform_ms (int): The rest: the server's own overhead.
    """

    total_ms: int
    endpoint_ms: int
    stt_ms: int
    llm_ms: int
    tool_ms: int
    tts_ms: int
    platform_ms: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        total_ms = self.total_ms

        endpoint_ms = self.endpoint_ms

        stt_ms = self.stt_ms

        llm_ms = self.llm_ms

        tool_ms = self.tool_ms

        tts_ms = self.tts_ms

        platform_ms = self.platform_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "totalMs": total_ms,
                "endpointMs": endpoint_ms,
                "sttMs": stt_ms,
                "llmMs": llm_ms,
                "toolMs": tool_ms,
                "ttsMs": tts_ms,
                "platformMs": platform_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        total_ms = d.pop("totalMs")

        endpoint_ms = d.pop("endpointMs")

        stt_ms = d.pop("sttMs")

        llm_ms = d.pop("llmMs")

        tool_ms = d.pop("toolMs")

        tts_ms = d.pop("ttsMs")

        platform_ms = d.pop("platformMs")

        latency_body = cls(
            total_ms=total_ms,
            endpoint_ms=endpoint_ms,
            stt_ms=stt_ms,
            llm_ms=llm_ms,
            tool_ms=tool_ms,
            tts_ms=tts_ms,
            platform_ms=platform_ms,
        )

        latency_body.additional_properties = d
        return latency_body

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
