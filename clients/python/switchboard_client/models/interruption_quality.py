from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="InterruptionQuality")


@_attrs_define
class InterruptionQuality:
    """The aggregates `GET /v1/observability/sessions/interruption-quality` answers.

    Attributes:
        sessions (int): Sessions in the range (with or without interruptions).
        interruptions (int): Interruptions the session detected (barge-ins).
        requested_interruptions (int): Interruptions a client asked for; not in the figures below.
        false_barge_ins (int): Interruptions whose speech held no recognisable words.
        detection_latency_p50_ms (float | None | Unset): Caller onset to decision, ms; `null` without interruptions.
        detection_latency_p95_ms (float | None | Unset):
        stop_latency_p50_ms (float | None | Unset): Decision to agent audio cleared, ms.
        stop_latency_p95_ms (float | None | Unset):
        bleed_through_words_mean (float | None | Unset): Agent words played over the caller per interruption.
        bleed_through_words_p95 (float | None | Unset):
        false_barge_in_rate (float | None | Unset): `falseBargeIns / interruptions`; `null` without interruptions.
    """

    sessions: int
    interruptions: int
    requested_interruptions: int
    false_barge_ins: int
    detection_latency_p50_ms: float | None | Unset = UNSET
    detection_latency_p95_ms: float | None | Unset = UNSET
    stop_latency_p50_ms: float | None | Unset = UNSET
    stop_latency_p95_ms: float | None | Unset = UNSET
    bleed_through_words_mean: float | None | Unset = UNSET
    bleed_through_words_p95: float | None | Unset = UNSET
    false_barge_in_rate: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        sessions = self.sessions

        interruptions = self.interruptions

        requested_interruptions = self.requested_interruptions

        false_barge_ins = self.false_barge_ins

        detection_latency_p50_ms: float | None | Unset
        if isinstance(self.detection_latency_p50_ms, Unset):
            detection_latency_p50_ms = UNSET
        else:
            detection_latency_p50_ms = self.detection_latency_p50_ms

        detection_latency_p95_ms: float | None | Unset
        if isinstance(self.detection_latency_p95_ms, Unset):
            detection_latency_p95_ms = UNSET
        else:
            detection_latency_p95_ms = self.detection_latency_p95_ms

        stop_latency_p50_ms: float | None | Unset
        if isinstance(self.stop_latency_p50_ms, Unset):
            stop_latency_p50_ms = UNSET
        else:
            stop_latency_p50_ms = self.stop_latency_p50_ms

        stop_latency_p95_ms: float | None | Unset
        if isinstance(self.stop_latency_p95_ms, Unset):
            stop_latency_p95_ms = UNSET
        else:
            stop_latency_p95_ms = self.stop_latency_p95_ms

        bleed_through_words_mean: float | None | Unset
        if isinstance(self.bleed_through_words_mean, Unset):
            bleed_through_words_mean = UNSET
        else:
            bleed_through_words_mean = self.bleed_through_words_mean

        bleed_through_words_p95: float | None | Unset
        if isinstance(self.bleed_through_words_p95, Unset):
            bleed_through_words_p95 = UNSET
        else:
            bleed_through_words_p95 = self.bleed_through_words_p95

        false_barge_in_rate: float | None | Unset
        if isinstance(self.false_barge_in_rate, Unset):
            false_barge_in_rate = UNSET
        else:
            false_barge_in_rate = self.false_barge_in_rate

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sessions": sessions,
                "interruptions": interruptions,
                "requestedInterruptions": requested_interruptions,
                "falseBargeIns": false_barge_ins,
            }
        )
        if detection_latency_p50_ms is not UNSET:
            field_dict["detectionLatencyP50Ms"] = detection_latency_p50_ms
        if detection_latency_p95_ms is not UNSET:
            field_dict["detectionLatencyP95Ms"] = detection_latency_p95_ms
        if stop_latency_p50_ms is not UNSET:
            field_dict["stopLatencyP50Ms"] = stop_latency_p50_ms
        if stop_latency_p95_ms is not UNSET:
            field_dict["stopLatencyP95Ms"] = stop_latency_p95_ms
        if bleed_through_words_mean is not UNSET:
            field_dict["bleedThroughWordsMean"] = bleed_through_words_mean
        if bleed_through_words_p95 is not UNSET:
            field_dict["bleedThroughWordsP95"] = bleed_through_words_p95
        if false_barge_in_rate is not UNSET:
            field_dict["falseBargeInRate"] = false_barge_in_rate

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        sessions = d.pop("sessions")

        interruptions = d.pop("interruptions")

        requested_interruptions = d.pop("requestedInterruptions")

        false_barge_ins = d.pop("falseBargeIns")

        def _parse_detection_latency_p50_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        detection_latency_p50_ms = _parse_detection_latency_p50_ms(d.pop("detectionLatencyP50Ms", UNSET))

        def _parse_detection_latency_p95_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        detection_latency_p95_ms = _parse_detection_latency_p95_ms(d.pop("detectionLatencyP95Ms", UNSET))

        def _parse_stop_latency_p50_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        stop_latency_p50_ms = _parse_stop_latency_p50_ms(d.pop("stopLatencyP50Ms", UNSET))

        def _parse_stop_latency_p95_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        stop_latency_p95_ms = _parse_stop_latency_p95_ms(d.pop("stopLatencyP95Ms", UNSET))

        def _parse_bleed_through_words_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        bleed_through_words_mean = _parse_bleed_through_words_mean(d.pop("bleedThroughWordsMean", UNSET))

        def _parse_bleed_through_words_p95(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        bleed_through_words_p95 = _parse_bleed_through_words_p95(d.pop("bleedThroughWordsP95", UNSET))

        def _parse_false_barge_in_rate(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        false_barge_in_rate = _parse_false_barge_in_rate(d.pop("falseBargeInRate", UNSET))

        interruption_quality = cls(
            sessions=sessions,
            interruptions=interruptions,
            requested_interruptions=requested_interruptions,
            false_barge_ins=false_barge_ins,
            detection_latency_p50_ms=detection_latency_p50_ms,
            detection_latency_p95_ms=detection_latency_p95_ms,
            stop_latency_p50_ms=stop_latency_p50_ms,
            stop_latency_p95_ms=stop_latency_p95_ms,
            bleed_through_words_mean=bleed_through_words_mean,
            bleed_through_words_p95=bleed_through_words_p95,
            false_barge_in_rate=false_barge_in_rate,
        )

        interruption_quality.additional_properties = d
        return interruption_quality

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
