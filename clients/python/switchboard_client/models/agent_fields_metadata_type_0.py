from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="AgentFieldsMetadataType0")


@_attrs_define
class AgentFieldsMetadataType0:
    """Arbitrary key-value pairs (at most 64 KiB serialized). Three keys are read: `tools`
    (HTTP tools: `[{name, description, parameters, url, method, timeoutMs, secret,
    headers}]`; `secret` and the `headers` values are stored sealed and read back as
    `{"hint": "<last characters>"}`, which sent back keeps the stored value), `fallbacks` (providers to try in order)
    and `turnTaking`, the agent's own
    turn taking in voice sessions: `{endpointSilenceMs: 100-10000 (600), bargeInMs: 20-2000
    (200), turnDetection: "smart" | "silence" (the server's engines.turn_detection,
    "silence" by default), smartPauseMs: 60-2000 (200), completeThreshold: 0-1 (0.5),
    incompleteSilenceMs: 100-10000 (1500)}`. With "smart", the end-of-turn model judges
    each pause of `smartPauseMs`: at `completeThreshold` or above the turn ends there,
    below it the pause may last `incompleteSilenceMs`; `endpointSilenceMs` decides when
    the model gives no verdict in time. All three are checked when the agent is
    written.

    """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        agent_fields_metadata_type_0 = cls()

        agent_fields_metadata_type_0.additional_properties = d
        return agent_fields_metadata_type_0

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
