from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.ingest_request_metadata_type_0 import IngestRequestMetadataType0


T = TypeVar("T", bound="IngestRequest")


@_attrs_define
class IngestRequest:
    """
    Attributes:
        content (None | str | Unset): The text (`text`, `transcript`), up to 1 MB. Not used for `audio` and `url`.
        content_type (None | str | Unset): `text` (default), `transcript` (one speaker turn per line), `audio`
            (sourceUrl is
            transcribed) or `url` (sourceUrl is fetched; HTML becomes readable text).
        source_url (None | str | Unset): Required for `audio` and `url`; stored with the document otherwise.
        chunk_size (int | None | Unset): Characters per chunk, 100-4000, default 1000.
        chunk_overlap (int | None | Unset): Characters carried over between chunks, 0-500 and less than chunkSize,
            default 200.
        metadata (IngestRequestMetadataType0 | None | Unset): Attached to every chunk of the document.
    """

    content: None | str | Unset = UNSET
    content_type: None | str | Unset = UNSET
    source_url: None | str | Unset = UNSET
    chunk_size: int | None | Unset = UNSET
    chunk_overlap: int | None | Unset = UNSET
    metadata: IngestRequestMetadataType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.ingest_request_metadata_type_0 import IngestRequestMetadataType0  # noqa: PLC0415

        content: None | str | Unset
        if isinstance(self.content, Unset):
            content = UNSET
        else:
            content = self.content

        content_type: None | str | Unset
        if isinstance(self.content_type, Unset):
            content_type = UNSET
        else:
            content_type = self.content_type

        source_url: None | str | Unset
        if isinstance(self.source_url, Unset):
            source_url = UNSET
        else:
            source_url = self.source_url

        chunk_size: int | None | Unset
        if isinstance(self.chunk_size, Unset):
            chunk_size = UNSET
        else:
            chunk_size = self.chunk_size

        chunk_overlap: int | None | Unset
        if isinstance(self.chunk_overlap, Unset):
            chunk_overlap = UNSET
        else:
            chunk_overlap = self.chunk_overlap

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, IngestRequestMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if content is not UNSET:
            field_dict["content"] = content
        if content_type is not UNSET:
            field_dict["contentType"] = content_type
        if source_url is not UNSET:
            field_dict["sourceUrl"] = source_url
        if chunk_size is not UNSET:
            field_dict["chunkSize"] = chunk_size
        if chunk_overlap is not UNSET:
            field_dict["chunkOverlap"] = chunk_overlap
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.ingest_request_metadata_type_0 import IngestRequestMetadataType0  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_content(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        content = _parse_content(d.pop("content", UNSET))

        def _parse_content_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        content_type = _parse_content_type(d.pop("contentType", UNSET))

        def _parse_source_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        source_url = _parse_source_url(d.pop("sourceUrl", UNSET))

        def _parse_chunk_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        chunk_size = _parse_chunk_size(d.pop("chunkSize", UNSET))

        def _parse_chunk_overlap(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        chunk_overlap = _parse_chunk_overlap(d.pop("chunkOverlap", UNSET))

        def _parse_metadata(data: object) -> IngestRequestMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = IngestRequestMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(IngestRequestMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        ingest_request = cls(
            content=content,
            content_type=content_type,
            source_url=source_url,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            metadata=metadata,
        )

        return ingest_request
