from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Issue")


@_attrs_define
class Issue:
    """One finding.

    Attributes:
        type_ (str): `high_latency`, `failed_turn`, `empty_transcript`, `long_silence`, `false_barge_in`,
            `slow_barge_in` or `bleed_through`.
        turn (int): The turn index it concerns.
        description (str):
        recommendation (str):
    """

    type_: str
    turn: int
    description: str
    recommendation: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_

        turn = self.turn

        description = self.description

        recommendation = self.recommendation

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
                "turn": turn,
                "description": description,
                "recommendation": recommendation,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        type_ = d.pop("type")

        turn = d.pop("turn")

        description = d.pop("description")

        recommendation = d.pop("recommendation")

        issue = cls(
            type_=type_,
            turn=turn,
            description=description,
            recommendation=recommendation,
        )

        issue.additional_properties = d
        return issue

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
