from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent_fields_analysis_type_0 import AgentFieldsAnalysisType0
    from ..models.agent_fields_metadata_type_0 import AgentFieldsMetadataType0
    from ..models.agent_fields_style_profile_type_0 import AgentFieldsStyleProfileType0
    from ..models.agent_fields_transfer_type_0_item import AgentFieldsTransferType0Item


T = TypeVar("T", bound="AgentFields")


@_attrs_define
class AgentFields:
    """The fields of an agent a client sets. On create, absent fields take their defaults; on
    update, absent fields stay as they are and `null` clears a nullable field.

        Attributes:
            id (None | str | Unset): Custom id on create: 1-60 letters, digits, `_` or `-`. Generated when omitted.
            name (None | str | Unset): 1-100 characters; required on create.
            description (None | str | Unset): Up to 1000 characters.
            system_prompt (None | str | Unset): Up to 10,000 characters.
            first_message (None | str | Unset): Greeting spoken at session start, up to 1000 characters.
            voice_id (None | str | Unset): Default `default`.
            tts_provider (None | str | Unset): A speech vendor id; default `default` (the embedded engine).
            tts_model (None | str | Unset):
            stt_provider (None | str | Unset): A transcription vendor id; default `default` (the embedded engine).
            llm_provider (None | str | Unset): A language-model vendor id; default `default` (the embedded engine).
            llm_model (None | str | Unset):
            collection_id (None | str | Unset): A collection of the same developer, for retrieval.
            style_profile (AgentFieldsStyleProfileType0 | None | Unset): Voice style configuration: an object, or null.
            language (None | str | Unset): Language code (`en`, `pt-BR`), default `en`; or `auto`: the caller's language is
                detected turn by turn, and the voice speaks its own. With `sttProvider` (or an stt
                fallback) `default`, a language the embedded recognizer hears (else 400 on create, and
                on an update that changes this, `sttProvider` or `metadata`).
            temperature (float | None | Unset): 0 to 2, default 0.7.
            max_tokens (int | None | Unset): 1 to 16384.
            metadata (AgentFieldsMetadataType0 | None | Unset): Arbitrary key-value pairs (at most 64 KiB serialized). Three
                keys are read: `tools`
                (HTTP tools: `[{name, description, parameters, url, method, timeoutMs, secret,
                headers}]`; `secret` and the `headers` values are stored sealed and read back as
                `{"hint": "<last characters>"}`, which sent back keeps the stored value), `fallbacks` (providers to try in
                order) and `turnTaking`, the agent's own
                turn taking in voice sessions: `{endpointSilenceMs: 100-10000 (600), bargeInMs: 20-2000
                (200), turnDetection: "smart" | "silence" (the server's engines.turn_detection,
                "silence" by default), smartPauseMs: 60-2000 (200), completeThreshold: 0-1 (0.5),
                incompleteSilenceMs: 100-10000 (1500)}`. With "smart", the end-of-turn model judges
                each pause of `smartPauseMs`: at `completeThreshold` or above the turn ends there,
                below it the pause may last `incompleteSilenceMs`; `endpointSilenceMs` decides when
                the model gives no verdict in time. All three are checked when the agent is
                written.
            transfer (list[AgentFieldsTransferType0Item] | None | Unset): Up to 10 people the agent may hand a phone call to
                with its `transfer_call` tool: `[{name, number, description, mode}]`. `name` is 1-64 characters, unique within
                the agent (case aside); `number` is E.164; `description` (optional, up to 500 characters) tells the agent when
                to hand over; `mode` `cold` (the default) redirects the call, `warm` holds the caller while the person is told
                what the call is about, then joins them. A list replaces the agent's whole list; `null` clears it to `[]`.
            analysis (AgentFieldsAnalysisType0 | None | Unset): Post-call analysis: after each of the agent's calls, its
                language model reads the transcript and writes what is asked here, stored on the session (`GET
                /v1/observability/sessions/{id}`, `analysis`) and sent as the `call.analyzed` webhook. `{summary,
                successCriteria, dataSchema}`: `summary` (default true) a few sentences on who called, what they wanted and how
                it ended; `successCriteria` (1-2000 characters) what a successful call achieves, judged yes or no with a reason;
                `dataSchema` a JSON Schema of an object (1-50 properties, at most 16 KiB, no references outside it) whose fields
                are extracted from the call and checked against it. `null` turns analysis off.
    """

    id: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    description: None | str | Unset = UNSET
    system_prompt: None | str | Unset = UNSET
    first_message: None | str | Unset = UNSET
    voice_id: None | str | Unset = UNSET
    tts_provider: None | str | Unset = UNSET
    tts_model: None | str | Unset = UNSET
    stt_provider: None | str | Unset = UNSET
    llm_provider: None | str | Unset = UNSET
    llm_model: None | str | Unset = UNSET
    collection_id: None | str | Unset = UNSET
    style_profile: AgentFieldsStyleProfileType0 | None | Unset = UNSET
    language: None | str | Unset = UNSET
    temperature: float | None | Unset = UNSET
    max_tokens: int | None | Unset = UNSET
    metadata: AgentFieldsMetadataType0 | None | Unset = UNSET
    transfer: list[AgentFieldsTransferType0Item] | None | Unset = UNSET
    analysis: AgentFieldsAnalysisType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.agent_fields_analysis_type_0 import AgentFieldsAnalysisType0  # noqa: PLC0415
        from ..models.agent_fields_metadata_type_0 import AgentFieldsMetadataType0  # noqa: PLC0415
        from ..models.agent_fields_style_profile_type_0 import AgentFieldsStyleProfileType0  # noqa: PLC0415

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

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

        voice_id: None | str | Unset
        if isinstance(self.voice_id, Unset):
            voice_id = UNSET
        else:
            voice_id = self.voice_id

        tts_provider: None | str | Unset
        if isinstance(self.tts_provider, Unset):
            tts_provider = UNSET
        else:
            tts_provider = self.tts_provider

        tts_model: None | str | Unset
        if isinstance(self.tts_model, Unset):
            tts_model = UNSET
        else:
            tts_model = self.tts_model

        stt_provider: None | str | Unset
        if isinstance(self.stt_provider, Unset):
            stt_provider = UNSET
        else:
            stt_provider = self.stt_provider

        llm_provider: None | str | Unset
        if isinstance(self.llm_provider, Unset):
            llm_provider = UNSET
        else:
            llm_provider = self.llm_provider

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
        elif isinstance(self.style_profile, AgentFieldsStyleProfileType0):
            style_profile = self.style_profile.to_dict()
        else:
            style_profile = self.style_profile

        language: None | str | Unset
        if isinstance(self.language, Unset):
            language = UNSET
        else:
            language = self.language

        temperature: float | None | Unset
        if isinstance(self.temperature, Unset):
            temperature = UNSET
        else:
            temperature = self.temperature

        max_tokens: int | None | Unset
        if isinstance(self.max_tokens, Unset):
            max_tokens = UNSET
        else:
            max_tokens = self.max_tokens

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, AgentFieldsMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        transfer: list[dict[str, Any]] | None | Unset
        if isinstance(self.transfer, Unset):
            transfer = UNSET
        elif isinstance(self.transfer, list):
            transfer = []
            for transfer_type_0_item_data in self.transfer:
                transfer_type_0_item = transfer_type_0_item_data.to_dict()
                transfer.append(transfer_type_0_item)

        else:
            transfer = self.transfer

        analysis: dict[str, Any] | None | Unset
        if isinstance(self.analysis, Unset):
            analysis = UNSET
        elif isinstance(self.analysis, AgentFieldsAnalysisType0):
            analysis = self.analysis.to_dict()
        else:
            analysis = self.analysis

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if id is not UNSET:
            field_dict["id"] = id
        if name is not UNSET:
            field_dict["name"] = name
        if description is not UNSET:
            field_dict["description"] = description
        if system_prompt is not UNSET:
            field_dict["systemPrompt"] = system_prompt
        if first_message is not UNSET:
            field_dict["firstMessage"] = first_message
        if voice_id is not UNSET:
            field_dict["voiceId"] = voice_id
        if tts_provider is not UNSET:
            field_dict["ttsProvider"] = tts_provider
        if tts_model is not UNSET:
            field_dict["ttsModel"] = tts_model
        if stt_provider is not UNSET:
            field_dict["sttProvider"] = stt_provider
        if llm_provider is not UNSET:
            field_dict["llmProvider"] = llm_provider
        if llm_model is not UNSET:
            field_dict["llmModel"] = llm_model
        if collection_id is not UNSET:
            field_dict["collectionId"] = collection_id
        if style_profile is not UNSET:
            field_dict["styleProfile"] = style_profile
        if language is not UNSET:
            field_dict["language"] = language
        if temperature is not UNSET:
            field_dict["temperature"] = temperature
        if max_tokens is not UNSET:
            field_dict["maxTokens"] = max_tokens
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if transfer is not UNSET:
            field_dict["transfer"] = transfer
        if analysis is not UNSET:
            field_dict["analysis"] = analysis

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.agent_fields_analysis_type_0 import AgentFieldsAnalysisType0  # noqa: PLC0415
        from ..models.agent_fields_metadata_type_0 import AgentFieldsMetadataType0  # noqa: PLC0415
        from ..models.agent_fields_style_profile_type_0 import AgentFieldsStyleProfileType0  # noqa: PLC0415
        from ..models.agent_fields_transfer_type_0_item import AgentFieldsTransferType0Item  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

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

        def _parse_voice_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        voice_id = _parse_voice_id(d.pop("voiceId", UNSET))

        def _parse_tts_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tts_provider = _parse_tts_provider(d.pop("ttsProvider", UNSET))

        def _parse_tts_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tts_model = _parse_tts_model(d.pop("ttsModel", UNSET))

        def _parse_stt_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stt_provider = _parse_stt_provider(d.pop("sttProvider", UNSET))

        def _parse_llm_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        llm_provider = _parse_llm_provider(d.pop("llmProvider", UNSET))

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

        def _parse_style_profile(data: object) -> AgentFieldsStyleProfileType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                style_profile_type_0 = AgentFieldsStyleProfileType0.from_dict(data)

                return style_profile_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AgentFieldsStyleProfileType0 | None | Unset, data)

        style_profile = _parse_style_profile(d.pop("styleProfile", UNSET))

        def _parse_language(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        language = _parse_language(d.pop("language", UNSET))

        def _parse_temperature(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        temperature = _parse_temperature(d.pop("temperature", UNSET))

        def _parse_max_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tokens = _parse_max_tokens(d.pop("maxTokens", UNSET))

        def _parse_metadata(data: object) -> AgentFieldsMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = AgentFieldsMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AgentFieldsMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_transfer(data: object) -> list[AgentFieldsTransferType0Item] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                transfer_type_0 = []
                _transfer_type_0 = data
                for transfer_type_0_item_data in _transfer_type_0:
                    transfer_type_0_item = AgentFieldsTransferType0Item.from_dict(transfer_type_0_item_data)

                    transfer_type_0.append(transfer_type_0_item)

                return transfer_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[AgentFieldsTransferType0Item] | None | Unset, data)

        transfer = _parse_transfer(d.pop("transfer", UNSET))

        def _parse_analysis(data: object) -> AgentFieldsAnalysisType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                analysis_type_0 = AgentFieldsAnalysisType0.from_dict(data)

                return analysis_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AgentFieldsAnalysisType0 | None | Unset, data)

        analysis = _parse_analysis(d.pop("analysis", UNSET))

        agent_fields = cls(
            id=id,
            name=name,
            description=description,
            system_prompt=system_prompt,
            first_message=first_message,
            voice_id=voice_id,
            tts_provider=tts_provider,
            tts_model=tts_model,
            stt_provider=stt_provider,
            llm_provider=llm_provider,
            llm_model=llm_model,
            collection_id=collection_id,
            style_profile=style_profile,
            language=language,
            temperature=temperature,
            max_tokens=max_tokens,
            metadata=metadata,
            transfer=transfer,
            analysis=analysis,
        )

        return agent_fields
