from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.agent_body import AgentBody
    from ..models.collection_body import CollectionBody
    from ..models.ingest_body import IngestBody


T = TypeVar("T", bound="ProvisionBody")


@_attrs_define
class ProvisionBody:
    """
    Attributes:
        agent (AgentBody): An agent as the API shows it.
        collection (CollectionBody):
        ingest_results (list[IngestBody]):
    """

    agent: AgentBody
    collection: CollectionBody
    ingest_results: list[IngestBody]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent = self.agent.to_dict()

        collection = self.collection.to_dict()

        ingest_results = []
        for ingest_results_item_data in self.ingest_results:
            ingest_results_item = ingest_results_item_data.to_dict()
            ingest_results.append(ingest_results_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent": agent,
                "collection": collection,
                "ingestResults": ingest_results,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.agent_body import AgentBody  # noqa: PLC0415
        from ..models.collection_body import CollectionBody  # noqa: PLC0415
        from ..models.ingest_body import IngestBody  # noqa: PLC0415

        d = dict(src_dict)
        agent = AgentBody.from_dict(d.pop("agent"))

        collection = CollectionBody.from_dict(d.pop("collection"))

        ingest_results = []
        _ingest_results = d.pop("ingestResults")
        for ingest_results_item_data in _ingest_results:
            ingest_results_item = IngestBody.from_dict(ingest_results_item_data)

            ingest_results.append(ingest_results_item)

        provision_body = cls(
            agent=agent,
            collection=collection,
            ingest_results=ingest_results,
        )

        provision_body.additional_properties = d
        return provision_body

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
