from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SyncBody")


@_attrs_define
class SyncBody:
    """
    Attributes:
        synced (bool):
        external_agent_id (str): The agent's id on the platform.
        provider (str): The platform, e.g. `elevenlabs`.
        created (bool): True when this sync created the agent there (first sync, or it had been deleted there).
        synced_at (str):
    """

    synced: bool
    external_agent_id: str
    provider: str
    created: bool
    synced_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        synced = self.synced

        external_agent_id = self.external_agent_id

        provider = self.provider

        created = self.created

        synced_at = self.synced_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "synced": synced,
                "externalAgentId": external_agent_id,
                "provider": provider,
                "created": created,
                "syncedAt": synced_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        synced = d.pop("synced")

        external_agent_id = d.pop("externalAgentId")

        provider = d.pop("provider")

        created = d.pop("created")

        synced_at = d.pop("syncedAt")

        sync_body = cls(
            synced=synced,
            external_agent_id=external_agent_id,
            provider=provider,
            created=created,
            synced_at=synced_at,
        )

        sync_body.additional_properties = d
        return sync_body

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
