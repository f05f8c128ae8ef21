from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SearchRequest")


@_attrs_define
class SearchRequest:
    """
    Attributes:
        query (None | str | Unset): 1-2000 characters.
        limit (int | None | Unset): 1-100, default 10.
        threshold (float | None | Unset): 0-1, default 0.7; score = (cosine similarity + 1) / 2.
        include_metadata (bool | None | Unset): Default true.
    """

    query: None | str | Unset = UNSET
    limit: int | None | Unset = UNSET
    threshold: float | None | Unset = UNSET
    include_metadata: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        query: None | str | Unset
        if isinstance(self.query, Unset):
            query = UNSET
        else:
            query = self.query

        limit: int | None | Unset
        if isinstance(self.limit, Unset):
            limit = UNSET
        else:
            limit = self.limit

        threshold: float | None | Unset
        if isinstance(self.threshold, Unset):
            threshold = UNSET
        else:
            threshold = self.threshold

        include_metadata: bool | None | Unset
        if isinstance(self.include_metadata, Unset):
            include_metadata = UNSET
        else:
            include_metadata = self.include_metadata

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if query is not UNSET:
            field_dict["query"] = query
        if limit is not UNSET:
            field_dict["limit"] = limit
        if threshold is not UNSET:
            field_dict["threshold"] = threshold
        if include_metadata is not UNSET:
            field_dict["includeMetadata"] = include_metadata

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_query(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        query = _parse_query(d.pop("query", UNSET))

        def _parse_limit(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        limit = _parse_limit(d.pop("limit", UNSET))

        def _parse_threshold(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        threshold = _parse_threshold(d.pop("threshold", UNSET))

        def _parse_include_metadata(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        include_metadata = _parse_include_metadata(d.pop("includeMetadata", UNSET))

        search_request = cls(
            query=query,
            limit=limit,
            threshold=threshold,
            include_metadata=include_metadata,
        )

        return search_request
