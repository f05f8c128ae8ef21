from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from .. import types
from ..types import UNSET, File, Unset

T = TypeVar("T", bound="TranscriptionForm")


@_attrs_define
class TranscriptionForm:
    """The form of `POST /v1/audio/transcriptions`, as the document shows it (OpenAI's fields).

    Attributes:
        file (File): The audio file, at most 25 MB.
        model (str): `whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe`,
            `gpt-4o-mini-transcribe-2025-12-15`, `gpt-4o-transcribe-diarize`, `gpt-transcribe` or
            `default`; the `mini` ones run the fast mode.
        language (None | str | Unset): The spoken language (ISO 639-1); detected when absent.
        prompt (None | str | Unset): Text that the audio continues (names, spelling).
        response_format (None | str | Unset): `json` (default), `text`, `srt`, `verbose_json` or `vtt`.
        temperature (float | None | Unset): 0 to 1, default 0.
        timestamp_granularities (list[str] | None | Unset): `word` and/or `segment`; needs `verbose_json`.
        stream (bool | None | Unset): `true` streams with the gpt-4o-transcribe family (a text/event-stream) and is
            ignored
            for `whisper-1`.
    """

    file: File
    model: str
    language: None | str | Unset = UNSET
    prompt: None | str | Unset = UNSET
    response_format: None | str | Unset = UNSET
    temperature: float | None | Unset = UNSET
    timestamp_granularities: list[str] | None | Unset = UNSET
    stream: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        file = self.file.to_tuple()

        model = self.model

        language: None | str | Unset
        if isinstance(self.language, Unset):
            language = UNSET
        else:
            language = self.language

        prompt: None | str | Unset
        if isinstance(self.prompt, Unset):
            prompt = UNSET
        else:
            prompt = self.prompt

        response_format: None | str | Unset
        if isinstance(self.response_format, Unset):
            response_format = UNSET
        else:
            response_format = self.response_format

        temperature: float | None | Unset
        if isinstance(self.temperature, Unset):
            temperature = UNSET
        else:
            temperature = self.temperature

        timestamp_granularities: list[str] | None | Unset
        if isinstance(self.timestamp_granularities, Unset):
            timestamp_granularities = UNSET
        elif isinstance(self.timestamp_granularities, list):
            timestamp_granularities = self.timestamp_granularities

        else:
            timestamp_granularities = self.timestamp_granularities

        stream: bool | None | Unset
        if isinstance(self.stream, Unset):
            stream = UNSET
        else:
            stream = self.stream

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "file": file,
                "model": model,
            }
        )
        if language is not UNSET:
            field_dict["language"] = language
        if prompt is not UNSET:
            field_dict["prompt"] = prompt
        if response_format is not UNSET:
            field_dict["response_format"] = response_format
        if temperature is not UNSET:
            field_dict["temperature"] = temperature
        if timestamp_granularities is not UNSET:
            field_dict["timestamp_granularities[]"] = timestamp_granularities
        if stream is not UNSET:
            field_dict["stream"] = stream

        return field_dict

    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("file", self.file.to_tuple()))

        files.append(("model", (None, str(self.model).encode(), "text/plain")))

        if not isinstance(self.language, Unset):
            if isinstance(self.language, str):
                files.append(("language", (None, str(self.language).encode(), "text/plain")))
            else:
                files.append(("language", (None, str(self.language).encode(), "text/plain")))

        if not isinstance(self.prompt, Unset):
            if isinstance(self.prompt, str):
                files.append(("prompt", (None, str(self.prompt).encode(), "text/plain")))
            else:
                files.append(("prompt", (None, str(self.prompt).encode(), "text/plain")))

        if not isinstance(self.response_format, Unset):
            if isinstance(self.response_format, str):
                files.append(("response_format", (None, str(self.response_format).encode(), "text/plain")))
            else:
                files.append(("response_format", (None, str(self.response_format).encode(), "text/plain")))

        if not isinstance(self.temperature, Unset):
            if isinstance(self.temperature, float):
                files.append(("temperature", (None, str(self.temperature).encode(), "text/plain")))
            else:
                files.append(("temperature", (None, str(self.temperature).encode(), "text/plain")))

        if not isinstance(self.timestamp_granularities, Unset):
            if isinstance(self.timestamp_granularities, list):
                for timestamp_granularities_type_0_item_element in self.timestamp_granularities:
                    files.append(
                        (
                            "timestamp_granularities[]",
                            (None, str(timestamp_granularities_type_0_item_element).encode(), "text/plain"),
                        )
                    )
            else:
                files.append(
                    ("timestamp_granularities[]", (None, str(self.timestamp_granularities).encode(), "text/plain"))
                )

        if not isinstance(self.stream, Unset):
            if isinstance(self.stream, bool):
                files.append(("stream", (None, str(self.stream).encode(), "text/plain")))
            else:
                files.append(("stream", (None, str(self.stream).encode(), "text/plain")))

        for prop_name, prop in self.additional_properties.items():
            files.append((prop_name, (None, str(prop).encode(), "text/plain")))

        return files

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        file = File(payload=BytesIO(d.pop("file")))

        model = d.pop("model")

        def _parse_language(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        language = _parse_language(d.pop("language", UNSET))

        def _parse_prompt(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        prompt = _parse_prompt(d.pop("prompt", UNSET))

        def _parse_response_format(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        response_format = _parse_response_format(d.pop("response_format", UNSET))

        def _parse_temperature(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        temperature = _parse_temperature(d.pop("temperature", UNSET))

        def _parse_timestamp_granularities(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                timestamp_granularities_type_0 = cast(list[str], data)

                return timestamp_granularities_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        timestamp_granularities = _parse_timestamp_granularities(d.pop("timestamp_granularities[]", UNSET))

        def _parse_stream(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        stream = _parse_stream(d.pop("stream", UNSET))

        transcription_form = cls(
            file=file,
            model=model,
            language=language,
            prompt=prompt,
            response_format=response_format,
            temperature=temperature,
            timestamp_granularities=timestamp_granularities,
            stream=stream,
        )

        transcription_form.additional_properties = d
        return transcription_form

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
