from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="UnrecognisedSpeechBody")


@_attrs_define
class UnrecognisedSpeechBody:
    """Caller speech in which nothing was recognised.

    Attributes:
        start_ms (int):
        end_ms (int):
        interrupted_turn (int | None | Unset): The agent turn it interrupted (a false barge-in), if it did.
    """

    start_ms: int
    end_ms: int
    interrupted_turn: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        start_ms = self.start_ms

        end_ms = self.end_ms

        interrupted_turn: int | None | Unset
        if isinstance(self.interrupted_turn, Unset):
            interrupted_turn = UNSET
        else:
            interrupted_turn = self.interrupted_turn

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "startMs": start_ms,
                "endMs": end_ms,
            }
        )
        if interrupted_turn is not UNSET:
            field_dict["interruptedTurn"] = interrupted_turn

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        start_ms = d.pop("startMs")

        end_ms = d.pop("endMs")

        def _parse_interrupted_turn(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        interrupted_turn = _parse_interrupted_turn(d.pop("interruptedTurn", UNSET))

        unrecognised_speech_body = cls(
            start_ms=start_ms,
            end_ms=end_ms,
            interrupted_turn=interrupted_turn,
        )

        unrecognised_speech_body.additional_properties = d
        return unrecognised_speech_body

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
