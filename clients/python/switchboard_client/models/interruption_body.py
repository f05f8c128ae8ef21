from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="InterruptionBody")


@_attrs_define
class InterruptionBody:
    """
    Attributes:
        detection_latency_ms (int): Caller speech onset to the interruption decision, ms (0 when requested).
        stop_latency_ms (int): Decision to the agent's audio cleared, ms (0 when requested).
        bleed_through (str): Agent words that played while the caller was already speaking.
        bleed_through_words (int):
        requested (bool): A client asked for it (`interrupt`, or a typed turn) rather than the caller's voice.
        false_barge_in (bool): No words were recognised in the interrupting speech.
    """

    detection_latency_ms: int
    stop_latency_ms: int
    bleed_through: str
    bleed_through_words: int
    requested: bool
    false_barge_in: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        detection_latency_ms = self.detection_latency_ms

        stop_latency_ms = self.stop_latency_ms

        bleed_through = self.bleed_through

        bleed_through_words = self.bleed_through_words

        requested = self.requested

        false_barge_in = self.false_barge_in

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "detectionLatencyMs": detection_latency_ms,
                "stopLatencyMs": stop_latency_ms,
                "bleedThrough": bleed_through,
                "bleedThroughWords": bleed_through_words,
                "requested": requested,
                "falseBargeIn": false_barge_in,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        detection_latency_ms = d.pop("detectionLatencyMs")

        stop_latency_ms = d.pop("stopLatencyMs")

        bleed_through = d.pop("bleedThrough")

        bleed_through_words = d.pop("bleedThroughWords")

        requested = d.pop("requested")

        false_barge_in = d.pop("falseBargeIn")

        interruption_body = cls(
            detection_latency_ms=detection_latency_ms,
            stop_latency_ms=stop_latency_ms,
            bleed_through=bleed_through,
            bleed_through_words=bleed_through_words,
            requested=requested,
            false_barge_in=false_barge_in,
        )

        interruption_body.additional_properties = d
        return interruption_body

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
