from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="IngestBody")


@_attrs_define
class IngestBody:
    """
    Attributes:
        document_id (str):
        chunks_created (int):
        tokens_used (int): Tokens embedded, as the embedding model's tokenizer counts them.
    """

    document_id: str
    chunks_created: int
    tokens_used: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        document_id = self.document_id

        chunks_created = self.chunks_created

        tokens_used = self.tokens_used

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "documentId": document_id,
                "chunksCreated": chunks_created,
                "tokensUsed": tokens_used,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        document_id = d.pop("documentId")

        chunks_created = d.pop("chunksCreated")

        tokens_used = d.pop("tokensUsed")

        ingest_body = cls(
            document_id=document_id,
            chunks_created=chunks_created,
            tokens_used=tokens_used,
        )

        ingest_body.additional_properties = d
        return ingest_body

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
