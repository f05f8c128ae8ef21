from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TranscribeRequest")


@_attrs_define
class TranscribeRequest:
    """The JSON form of a transcription request. Multipart forms carry the same fields as text
    parts, plus the audio as the `file` part.

        Attributes:
            audio_url (None | str | Unset): http(s) URL of the audio (JSON requests need it; forms send `file` or this).
                Loopback,
                private and link-local addresses are refused unless the operator allows them.
            language (None | str | Unset): ISO 639-1 code; empty or absent detects the language.
            mode (None | str | Unset): `accurate` (default: the multilingual model with beam search) or `fast` (greedy; the
                English model for English).
            diarize (bool | None | Unset): Label speakers (`speaker_1`, ...): one per channel when the channels carry
                different
                voices (a call recording), by voice pitch for mono audio and for channels that carry
                the same voice. Channels with different voices are each transcribed (two voices, two
                recognitions) whether or not this is set; without it their segments have no speaker.
            timestamps (None | str | Unset): `segment` (default) or `word` (adds `words`).
    """

    audio_url: None | str | Unset = UNSET
    language: None | str | Unset = UNSET
    mode: None | str | Unset = UNSET
    diarize: bool | None | Unset = UNSET
    timestamps: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        audio_url: None | str | Unset
        if isinstance(self.audio_url, Unset):
            audio_url = UNSET
        else:
            audio_url = self.audio_url

        language: None | str | Unset
        if isinstance(self.language, Unset):
            language = UNSET
        else:
            language = self.language

        mode: None | str | Unset
        if isinstance(self.mode, Unset):
            mode = UNSET
        else:
            mode = self.mode

        diarize: bool | None | Unset
        if isinstance(self.diarize, Unset):
            diarize = UNSET
        else:
            diarize = self.diarize

        timestamps: None | str | Unset
        if isinstance(self.timestamps, Unset):
            timestamps = UNSET
        else:
            timestamps = self.timestamps

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if audio_url is not UNSET:
            field_dict["audioUrl"] = audio_url
        if language is not UNSET:
            field_dict["language"] = language
        if mode is not UNSET:
            field_dict["mode"] = mode
        if diarize is not UNSET:
            field_dict["diarize"] = diarize
        if timestamps is not UNSET:
            field_dict["timestamps"] = timestamps

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_audio_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        audio_url = _parse_audio_url(d.pop("audioUrl", UNSET))

        def _parse_language(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        language = _parse_language(d.pop("language", UNSET))

        def _parse_mode(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        mode = _parse_mode(d.pop("mode", UNSET))

        def _parse_diarize(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        diarize = _parse_diarize(d.pop("diarize", UNSET))

        def _parse_timestamps(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        timestamps = _parse_timestamps(d.pop("timestamps", UNSET))

        transcribe_request = cls(
            audio_url=audio_url,
            language=language,
            mode=mode,
            diarize=diarize,
            timestamps=timestamps,
        )

        return transcribe_request
