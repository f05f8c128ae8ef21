from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.ingest_request import IngestRequest
    from ..models.provision_collection import ProvisionCollection


T = TypeVar("T", bound="ProvisionRequest")


@_attrs_define
class ProvisionRequest:
    """
    Attributes:
        name (None | str | Unset): 1-100 characters.
        system_prompt (None | str | Unset): Up to 10,000 characters.
        collection (None | ProvisionCollection | Unset):
        initial_content (list[IngestRequest] | None | Unset): At most 50 items, each as the body of POST
            /v1/collections/{id}/ingest.
        tts_provider (None | str | Unset):
        llm_provider (None | str | Unset):
    """

    name: None | str | Unset = UNSET
    system_prompt: None | str | Unset = UNSET
    collection: None | ProvisionCollection | Unset = UNSET
    initial_content: list[IngestRequest] | None | Unset = UNSET
    tts_provider: None | str | Unset = UNSET
    llm_provider: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.provision_collection import ProvisionCollection  # noqa: PLC0415

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        system_prompt: None | str | Unset
        if isinstance(self.system_prompt, Unset):
            system_prompt = UNSET
        else:
            system_prompt = self.system_prompt

        collection: dict[str, Any] | None | Unset
        if isinstance(self.collection, Unset):
            collection = UNSET
        elif isinstance(self.collection, ProvisionCollection):
            collection = self.collection.to_dict()
        else:
            collection = self.collection

        initial_content: list[dict[str, Any]] | None | Unset
        if isinstance(self.initial_content, Unset):
            initial_content = UNSET
        elif isinstance(self.initial_content, list):
            initial_content = []
            for initial_content_type_0_item_data in self.initial_content:
                initial_content_type_0_item = initial_content_type_0_item_data.to_dict()
                initial_content.append(initial_content_type_0_item)

        else:
            initial_content = self.initial_content

        tts_provider: None | str | Unset
        if isinstance(self.tts_provider, Unset):
            tts_provider = UNSET
        else:
            tts_provider = self.tts_provider

        llm_provider: None | str | Unset
        if isinstance(self.llm_provider, Unset):
            llm_provider = UNSET
        else:
            llm_provider = self.llm_provider

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name
        if system_prompt is not UNSET:
            field_dict["systemPrompt"] = system_prompt
        if collection is not UNSET:
            field_dict["collection"] = collection
        if initial_content is not UNSET:
            field_dict["initialContent"] = initial_content
        if tts_provider is not UNSET:
            field_dict["ttsProvider"] = tts_provider
        if llm_provider is not UNSET:
            field_dict["llmProvider"] = llm_provider

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.ingest_request import IngestRequest  # noqa: PLC0415
        from ..models.provision_collection import ProvisionCollection  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_system_prompt(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        system_prompt = _parse_system_prompt(d.pop("systemPrompt", UNSET))

        def _parse_collection(data: object) -> None | ProvisionCollection | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                collection_type_1 = ProvisionCollection.from_dict(data)

                return collection_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ProvisionCollection | Unset, data)

        collection = _parse_collection(d.pop("collection", UNSET))

        def _parse_initial_content(data: object) -> list[IngestRequest] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                initial_content_type_0 = []
                _initial_content_type_0 = data
                for initial_content_type_0_item_data in _initial_content_type_0:
                    initial_content_type_0_item = IngestRequest.from_dict(initial_content_type_0_item_data)

                    initial_content_type_0.append(initial_content_type_0_item)

                return initial_content_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[IngestRequest] | None | Unset, data)

        initial_content = _parse_initial_content(d.pop("initialContent", UNSET))

        def _parse_tts_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tts_provider = _parse_tts_provider(d.pop("ttsProvider", UNSET))

        def _parse_llm_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        llm_provider = _parse_llm_provider(d.pop("llmProvider", UNSET))

        provision_request = cls(
            name=name,
            system_prompt=system_prompt,
            collection=collection,
            initial_content=initial_content,
            tts_provider=tts_provider,
            llm_provider=llm_provider,
        )

        return provision_request
