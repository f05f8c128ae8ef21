from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SynthesizeRequest")


@_attrs_define
class SynthesizeRequest:
    """
    Attributes:
        text (None | str | Unset): 1-10,000 characters.
        voice_id (None | str | Unset): Default `default` (the embedded neural voice). `espeak-<lang>` voices and every
            installed Piper voice are listed by `GET /v1/audio/models`.
        format_ (None | str | Unset): `wav` (default; PCM16 mono 24 kHz), `mp3` (mono 24 kHz, 64 kbit/s) or `ogg` (Opus,
            mono 48 kHz).
        speed (float | None | Unset): 0.5-2.0, default 1.0.
        pitch (float | None | Unset): 0.5-2.0, default 1.0.
        provider (None | str | Unset): A speech vendor id, default `default` (the embedded engine).
    """

    text: None | str | Unset = UNSET
    voice_id: None | str | Unset = UNSET
    format_: None | str | Unset = UNSET
    speed: float | None | Unset = UNSET
    pitch: float | None | Unset = UNSET
    provider: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        text: None | str | Unset
        if isinstance(self.text, Unset):
            text = UNSET
        else:
            text = self.text

        voice_id: None | str | Unset
        if isinstance(self.voice_id, Unset):
            voice_id = UNSET
        else:
            voice_id = self.voice_id

        format_: None | str | Unset
        if isinstance(self.format_, Unset):
            format_ = UNSET
        else:
            format_ = self.format_

        speed: float | None | Unset
        if isinstance(self.speed, Unset):
            speed = UNSET
        else:
            speed = self.speed

        pitch: float | None | Unset
        if isinstance(self.pitch, Unset):
            pitch = UNSET
        else:
            pitch = self.pitch

        provider: None | str | Unset
        if isinstance(self.provider, Unset):
            provider = UNSET
        else:
            provider = self.provider

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if text is not UNSET:
            field_dict["text"] = text
        if voice_id is not UNSET:
            field_dict["voiceId"] = voice_id
        if format_ is not UNSET:
            field_dict["format"] = format_
        if speed is not UNSET:
            field_dict["speed"] = speed
        if pitch is not UNSET:
            field_dict["pitch"] = pitch
        if provider is not UNSET:
            field_dict["provider"] = provider

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_text(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        text = _parse_text(d.pop("text", UNSET))

        def _parse_voice_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        voice_id = _parse_voice_id(d.pop("voiceId", UNSET))

        def _parse_format_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        format_ = _parse_format_(d.pop("format", UNSET))

        def _parse_speed(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        speed = _parse_speed(d.pop("speed", UNSET))

        def _parse_pitch(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        pitch = _parse_pitch(d.pop("pitch", UNSET))

        def _parse_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider = _parse_provider(d.pop("provider", UNSET))

        synthesize_request = cls(
            text=text,
            voice_id=voice_id,
            format_=format_,
            speed=speed,
            pitch=pitch,
            provider=provider,
        )

        return synthesize_request
