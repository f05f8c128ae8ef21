from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent_body_analysis_type_0 import AgentBodyAnalysisType0
    from ..models.agent_body_metadata import AgentBodyMetadata
    from ..models.agent_body_style_profile_type_0 import AgentBodyStyleProfileType0
    from ..models.transfer_target import TransferTarget


T = TypeVar("T", bound="AgentBody")


@_attrs_define
class AgentBody:
    """An agent as the API shows it.

    Attributes:
        id (str):
        name (str):
        voice_id (str):
        tts_provider (str):
        stt_provider (str): Speech-to-text provider (an addition to the spec's fields); default `default`.
        llm_provider (str):
        language (str):
        temperature (float):
        metadata (AgentBodyMetadata):
        transfer (list[TransferTarget]): The people the agent may hand a phone call to with its `transfer_call` tool (at
            most
            10); `[]` for none.
        status (str): `active`; archived agents are not served.
        created_at (str):
        updated_at (str):
        warnings (list[str]): What in the agent will not work as written, in words (an addition to the spec's
            fields; `[]` when nothing): today, tools (`metadata.tools`, `transfer`) on the embedded
            language model, which cannot call them. The agent is saved all the same.
        description (None | str | Unset):
        system_prompt (None | str | Unset):
        first_message (None | str | Unset):
        tts_model (None | str | Unset):
        llm_model (None | str | Unset):
        collection_id (None | str | Unset):
        style_profile (AgentBodyStyleProfileType0 | None | Unset):
        max_tokens (int | None | Unset):
        analysis (AgentBodyAnalysisType0 | None | Unset): Post-call analysis: after each of the agent's calls, its
            language model reads the transcript and writes what is asked here, stored on the session (`GET
            /v1/observability/sessions/{id}`, `analysis`) and sent as the `call.analyzed` webhook. `{summary,
            successCriteria, dataSchema}`: `summary` (default true) a few sentences on who called, what they wanted and how
            it ended; `successCriteria` (1-2000 characters) what a successful call achieves, judged yes or no with a reason;
            `dataSchema` a JSON Schema of an object (1-50 properties, at most 16 KiB, no references outside it) whose fields
            are extracted from the call and checked against it. `null` turns analysis off.
    """

    id: str
    name: str
    voice_id: str
    tts_provider: str
    stt_provider: str
    llm_provider: str
    language: str
    temperature: float
    metadata: AgentBodyMetadata
    transfer: list[TransferTarget]
    status: str
    created_at: str
    updated_at: str
    warnings: list[str]
    description: None | str | Unset = UNSET
    system_prompt: None | str | Unset = UNSET
    first_message: None | str | Unset = UNSET
    tts_model: None | str | Unset = UNSET
    llm_model: None | str | Unset = UNSET
    collection_id: None | str | Unset = UNSET
    style_profile: AgentBodyStyleProfileType0 | None | Unset = UNSET
    max_tokens: int | None | Unset = UNSET
    analysis: AgentBodyAnalysisType0 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.agent_body_analysis_type_0 import AgentBodyAnalysisType0  # noqa: PLC0415
        from ..models.agent_body_style_profile_type_0 import AgentBodyStyleProfileType0  # noqa: PLC0415

        id = self.id

        name = self.name

        voice_id = self.voice_id

        tts_provider = self.tts_provider

        stt_provider = self.stt_provider

        llm_provider = self.llm_provider

        language = self.language

        temperature = self.temperature

        metadata = self.metadata.to_dict()

        transfer = []
        for transfer_item_data in self.transfer:
            transfer_item = transfer_item_data.to_dict()
            transfer.append(transfer_item)

        status = self.status

        created_at = self.created_at

        updated_at = self.updated_at

        warnings = self.warnings

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        system_prompt: None | str | Unset
        if isinstance(self.system_prompt, Unset):
            system_prompt = UNSET
        else:
            system_prompt = self.system_prompt

        first_message: None | str | Unset
        if isinstance(self.first_message, Unset):
            first_message = UNSET
        else:
            first_message = self.first_message

        tts_model: None | str | Unset
        if isinstance(self.tts_model, Unset):
            tts_model = UNSET
        else:
            tts_model = self.tts_model

        llm_model: None | str | Unset
        if isinstance(self.llm_model, Unset):
            llm_model = UNSET
        else:
            llm_model = self.llm_model

        collection_id: None | str | Unset
        if isinstance(self.collection_id, Unset):
            collection_id = UNSET
        else:
            collection_id = self.collection_id

        style_profile: dict[str, Any] | None | Unset
        if isinstance(self.style_profile, Unset):
            style_profile = UNSET
        elif isinstance(self.style_profile, AgentBodyStyleProfileType0):
            style_profile = self.style_profile.to_dict()
        else:
            style_profile = self.style_profile

        max_tokens: int | None | Unset
        if isinstance(self.max_tokens, Unset):
            max_tokens = UNSET
        else:
            max_tokens = self.max_tokens

        analysis: dict[str, Any] | None | Unset
        if isinstance(self.analysis, Unset):
            analysis = UNSET
        elif isinstance(self.analysis, AgentBodyAnalysisType0):
            analysis = self.analysis.to_dict()
        else:
            analysis = self.analysis

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "voiceId": voice_id,
                "ttsProvider": tts_provider,
                "sttProvider": stt_provider,
                "llmProvider": llm_provider,
                "language": language,
                "temperature": temperature,
                "metadata": metadata,
                "transfer": transfer,
                "status": status,
                "createdAt": created_at,
                "updatedAt": updated_at,
                "warnings": warnings,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if system_prompt is not UNSET:
            field_dict["systemPrompt"] = system_prompt
        if first_message is not UNSET:
            field_dict["firstMessage"] = first_message
        if tts_model is not UNSET:
            field_dict["ttsModel"] = tts_model
        if llm_model is not UNSET:
            field_dict["llmModel"] = llm_model
        if collection_id is not UNSET:
            field_dict["collectionId"] = collection_id
        if style_profile is not UNSET:
            field_dict["styleProfile"] = style_profile
        if max_tokens is not UNSET:
            field_dict["maxTokens"] = max_tokens
        if analysis is not UNSET:
            field_dict["analysis"] = analysis

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.agent_body_analysis_type_0 import AgentBodyAnalysisType0  # noqa: PLC0415
        from ..models.agent_body_metadata import AgentBodyMetadata  # noqa: PLC0415
        from ..models.agent_body_style_profile_type_0 import AgentBodyStyleProfileType0  # noqa: PLC0415
        from ..models.transfer_target import TransferTarget  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        voice_id = d.pop("voiceId")

        tts_provider = d.pop("ttsProvider")

        stt_provider = d.pop("sttProvider")

        llm_provider = d.pop("llmProvider")

        language = d.pop("language")

        temperature = d.pop("temperature")

        metadata = AgentBodyMetadata.from_dict(d.pop("metadata"))

        transfer = []
        _transfer = d.pop("transfer")
        for transfer_item_data in _transfer:
            transfer_item = TransferTarget.from_dict(transfer_item_data)

            transfer.append(transfer_item)

        status = d.pop("status")

        created_at = d.pop("createdAt")

        updated_at = d.pop("updatedAt")

        warnings = cast(list[str], d.pop("warnings"))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_system_prompt(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        system_prompt = _parse_system_prompt(d.pop("systemPrompt", UNSET))

        def _parse_first_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        first_message = _parse_first_message(d.pop("firstMessage", UNSET))

        def _parse_tts_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tts_model = _parse_tts_model(d.pop("ttsModel", UNSET))

        def _parse_llm_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        llm_model = _parse_llm_model(d.pop("llmModel", UNSET))

        def _parse_collection_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        collection_id = _parse_collection_id(d.pop("collectionId", UNSET))

        def _parse_style_profile(data: object) -> AgentBodyStyleProfileType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                style_profile_type_0 = AgentBodyStyleProfileType0.from_dict(data)

                return style_profile_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AgentBodyStyleProfileType0 | None | Unset, data)

        style_profile = _parse_style_profile(d.pop("styleProfile", UNSET))

        def _parse_max_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tokens = _parse_max_tokens(d.pop("maxTokens", UNSET))

        def _parse_analysis(data: object) -> AgentBodyAnalysisType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                analysis_type_0 = AgentBodyAnalysisType0.from_dict(data)

                return analysis_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AgentBodyAnalysisType0 | None | Unset, data)

        analysis = _parse_analysis(d.pop("analysis", UNSET))

        agent_body = cls(
            id=id,
            name=name,
            voice_id=voice_id,
            tts_provider=tts_provider,
            stt_provider=stt_provider,
            llm_provider=llm_provider,
            language=language,
            temperature=temperature,
            metadata=metadata,
            transfer=transfer,
            status=status,
            created_at=created_at,
            updated_at=updated_at,
            warnings=warnings,
            description=description,
            system_prompt=system_prompt,
            first_message=first_message,
            tts_model=tts_model,
            llm_model=llm_model,
            collection_id=collection_id,
            style_profile=style_profile,
            max_tokens=max_tokens,
            analysis=analysis,
        )

        agent_body.additional_properties = d
        return agent_body

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
