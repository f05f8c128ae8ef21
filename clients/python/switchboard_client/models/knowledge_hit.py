from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.knowledge_hit_metadata_type_0 import KnowledgeHitMetadataType0


T = TypeVar("T", bound="KnowledgeHit")


@_attrs_define
class KnowledgeHit:
    """One search result.

    Attributes:
        content (str):
        score (float): 0-1: the cosine similarity of the query and the chunk (negatives clamped to 0).
        document_id (str):
        chunk_index (int):
        metadata (KnowledgeHitMetadataType0 | None | Unset):
    """

    content: str
    score: float
    document_id: str
    chunk_index: int
    metadata: KnowledgeHitMetadataType0 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.knowledge_hit_metadata_type_0 import KnowledgeHitMetadataType0  # noqa: PLC0415

        content = self.content

        score = self.score

        document_id = self.document_id

        chunk_index = self.chunk_index

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, KnowledgeHitMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "content": content,
                "score": score,
                "documentId": document_id,
                "chunkIndex": chunk_index,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.knowledge_hit_metadata_type_0 import KnowledgeHitMetadataType0  # noqa: PLC0415

        d = dict(src_dict)
        content = d.pop("content")

        score = d.pop("score")

        document_id = d.pop("documentId")

        chunk_index = d.pop("chunkIndex")

        def _parse_metadata(data: object) -> KnowledgeHitMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = KnowledgeHitMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(KnowledgeHitMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        knowledge_hit = cls(
            content=content,
            score=score,
            document_id=document_id,
            chunk_index=chunk_index,
            metadata=metadata,
        )

        knowledge_hit.additional_properties = d
        return knowledge_hit

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
