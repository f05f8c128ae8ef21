from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BreakdownBody")


@_attrs_define
class BreakdownBody:
    """Credits used per kind of work.

    Attributes:
        tts (float):
        stt (float):
        llm (float):
        rag (float):
    """

    tts: float
    stt: float
    llm: float
    rag: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tts = self.tts

        stt = self.stt

        llm = self.llm

        rag = self.rag

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tts": tts,
                "stt": stt,
                "llm": llm,
                "rag": rag,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        tts = d.pop("tts")

        stt = d.pop("stt")

        llm = d.pop("llm")

        rag = d.pop("rag")

        breakdown_body = cls(
            tts=tts,
            stt=stt,
            llm=llm,
            rag=rag,
        )

        breakdown_body.additional_properties = d
        return breakdown_body

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
