from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.speech_body_voice import SpeechBodyVoice


T = TypeVar("T", bound="SpeechBody")


@_attrs_define
class SpeechBody:
    """The body of `POST /v1/audio/speech`.

    Attributes:
        voice (SpeechBodyVoice): An OpenAI voice name (spoken by our default voice), one of our voice ids, or
            `{"id": "..."}`.
        model (None | str | Unset):
        input_ (None | str | Unset): Up to 4096 characters.
        instructions (None | str | Unset): Accepted for compatibility; the embedded voice does not take style
            instructions.
        response_format (None | str | Unset): `mp3` (default), `opus` (Ogg Opus), `wav` or `pcm` (24 kHz, 16-bit, mono,
            raw).
            `aac` and `flac` are refused.
        speed (float | None | Unset): 0.25-4.0, default 1.0; the voice itself speaks at 0.5-2.0 and values beyond are
            held
            at those bounds.
        stream_format (None | str | Unset): `audio` (default) or `sse`.
    """

    voice: SpeechBodyVoice
    model: None | str | Unset = UNSET
    input_: None | str | Unset = UNSET
    instructions: None | str | Unset = UNSET
    response_format: None | str | Unset = UNSET
    speed: float | None | Unset = UNSET
    stream_format: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        voice = self.voice.to_dict()

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        input_: None | str | Unset
        if isinstance(self.input_, Unset):
            input_ = UNSET
        else:
            input_ = self.input_

        instructions: None | str | Unset
        if isinstance(self.instructions, Unset):
            instructions = UNSET
        else:
            instructions = self.instructions

        response_format: None | str | Unset
        if isinstance(self.response_format, Unset):
            response_format = UNSET
        else:
            response_format = self.response_format

        speed: float | None | Unset
        if isinstance(self.speed, Unset):
            speed = UNSET
        else:
            speed = self.speed

        stream_format: None | str | Unset
        if isinstance(self.stream_format, Unset):
            stream_format = UNSET
        else:
            stream_format = self.stream_format

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "voice": voice,
            }
        )
        if model is not UNSET:
            field_dict["model"] = model
        if input_ is not UNSET:
            field_dict["input"] = input_
        if instructions is not UNSET:
            field_dict["instructions"] = instructions
        if response_format is not UNSET:
            field_dict["response_format"] = response_format
        if speed is not UNSET:
            field_dict["speed"] = speed
        if stream_format is not UNSET:
            field_dict["stream_format"] = stream_format

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.speech_body_voice import SpeechBodyVoice  # noqa: PLC0415

        d = dict(src_dict)
        voice = SpeechBodyVoice.from_dict(d.pop("voice"))

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        def _parse_input_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        input_ = _parse_input_(d.pop("input", UNSET))

        def _parse_instructions(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instructions = _parse_instructions(d.pop("instructions", UNSET))

        def _parse_response_format(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        response_format = _parse_response_format(d.pop("response_format", UNSET))

        def _parse_speed(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        speed = _parse_speed(d.pop("speed", UNSET))

        def _parse_stream_format(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stream_format = _parse_stream_format(d.pop("stream_format", UNSET))

        speech_body = cls(
            voice=voice,
            model=model,
            input_=input_,
            instructions=instructions,
            response_format=response_format,
            speed=speed,
            stream_format=stream_format,
        )

        speech_body.additional_properties = d
        return speech_body

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
