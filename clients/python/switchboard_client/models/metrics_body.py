from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="MetricsBody")


@_attrs_define
class MetricsBody:
    """
    Attributes:
        total_duration_ms (int):
        tool_executions (int):
        avg_turn_latency_ms (int | None | Unset): Mean reply latency over the agent's replies that reached audio; `null`
            when no caller
            turn was answered.
    """

    total_duration_ms: int
    tool_executions: int
    avg_turn_latency_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        total_duration_ms = self.total_duration_ms

        tool_executions = self.tool_executions

        avg_turn_latency_ms: int | None | Unset
        if isinstance(self.avg_turn_latency_ms, Unset):
            avg_turn_latency_ms = UNSET
        else:
            avg_turn_latency_ms = self.avg_turn_latency_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "totalDurationMs": total_duration_ms,
                "toolExecutions": tool_executions,
            }
        )
        if avg_turn_latency_ms is not UNSET:
            field_dict["avgTurnLatencyMs"] = avg_turn_latency_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        total_duration_ms = d.pop("totalDurationMs")

        tool_executions = d.pop("toolExecutions")

        def _parse_avg_turn_latency_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        avg_turn_latency_ms = _parse_avg_turn_latency_ms(d.pop("avgTurnLatencyMs", UNSET))

        metrics_body = cls(
            total_duration_ms=total_duration_ms,
            tool_executions=tool_executions,
            avg_turn_latency_ms=avg_turn_latency_ms,
        )

        metrics_body.additional_properties = d
        return metrics_body

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
