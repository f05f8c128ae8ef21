from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.segment_body import SegmentBody
    from ..models.word_body import WordBody


T = TypeVar("T", bound="TranscriptionBody")


@_attrs_define
class TranscriptionBody:
    """The transcription result as the API shows it (`POST /v1/transcribe`, completed jobs).
    Times are seconds, rounded to milliseconds.

        Attributes:
            text (str):
            segments (list[SegmentBody]):
            language (str): ISO 639-1 code of the language spoken (detected unless given).
            duration (float): Seconds of audio.
            words (list[WordBody] | None | Unset): Present when `timestamps` was `word`.
            language_probability (float | None | Unset): How sure the recognizer was of `language` (0-1) when it detected
                it; absent when the
                language was given or the engine does not say.
    """

    text: str
    segments: list[SegmentBody]
    language: str
    duration: float
    words: list[WordBody] | None | Unset = UNSET
    language_probability: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        text = self.text

        segments = []
        for segments_item_data in self.segments:
            segments_item = segments_item_data.to_dict()
            segments.append(segments_item)

        language = self.language

        duration = self.duration

        words: list[dict[str, Any]] | None | Unset
        if isinstance(self.words, Unset):
            words = UNSET
        elif isinstance(self.words, list):
            words = []
            for words_type_0_item_data in self.words:
                words_type_0_item = words_type_0_item_data.to_dict()
                words.append(words_type_0_item)

        else:
            words = self.words

        language_probability: float | None | Unset
        if isinstance(self.language_probability, Unset):
            language_probability = UNSET
        else:
            language_probability = self.language_probability

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "text": text,
                "segments": segments,
                "language": language,
                "duration": duration,
            }
        )
        if words is not UNSET:
            field_dict["words"] = words
        if language_probability is not UNSET:
            field_dict["languageProbability"] = language_probability

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.segment_body import SegmentBody  # noqa: PLC0415
        from ..models.word_body import WordBody  # noqa: PLC0415

        d = dict(src_dict)
        text = d.pop("text")

        segments = []
        _segments = d.pop("segments")
        for segments_item_data in _segments:
            segments_item = SegmentBody.from_dict(segments_item_data)

            segments.append(segments_item)

        language = d.pop("language")

        duration = d.pop("duration")

        def _parse_words(data: object) -> list[WordBody] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                words_type_0 = []
                _words_type_0 = data
                for words_type_0_item_data in _words_type_0:
                    words_type_0_item = WordBody.from_dict(words_type_0_item_data)

                    words_type_0.append(words_type_0_item)

                return words_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[WordBody] | None | Unset, data)

        words = _parse_words(d.pop("words", UNSET))

        def _parse_language_probability(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        language_probability = _parse_language_probability(d.pop("languageProbability", UNSET))

        transcription_body = cls(
            text=text,
            segments=segments,
            language=language,
            duration=duration,
            words=words,
            language_probability=language_probability,
        )

        transcription_body.additional_properties = d
        return transcription_body

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
