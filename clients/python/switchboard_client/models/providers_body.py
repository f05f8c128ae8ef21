from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ProvidersBody")


@_attrs_define
class ProvidersBody:
    """
    Attributes:
        stt (None | str | Unset):
        llm (None | str | Unset):
        tts (None | str | Unset):
    """

    stt: None | str | Unset = UNSET
    llm: None | str | Unset = UNSET
    tts: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        stt: None | str | Unset
        if isinstance(self.stt, Unset):
            stt = UNSET
        else:
            stt = self.stt

        llm: None | str | Unset
        if isinstance(self.llm, Unset):
            llm = UNSET
        else:
            llm = self.llm

        tts: None | str | Unset
        if isinstance(self.tts, Unset):
            tts = UNSET
        else:
            tts = self.tts

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if stt is not UNSET:
            field_dict["stt"] = stt
        if llm is not UNSET:
            field_dict["llm"] = llm
        if tts is not UNSET:
            field_dict["tts"] = tts

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_stt(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stt = _parse_stt(d.pop("stt", UNSET))

        def _parse_llm(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        llm = _parse_llm(d.pop("llm", UNSET))

        def _parse_tts(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tts = _parse_tts(d.pop("tts", UNSET))

        providers_body = cls(
            stt=stt,
            llm=llm,
            tts=tts,
        )

        providers_body.additional_properties = d
        return providers_body

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
