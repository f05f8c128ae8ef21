from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.open_ai_model_body import OpenAiModelBody


T = TypeVar("T", bound="OpenAiModelList")


@_attrs_define
class OpenAiModelList:
    """OpenAI's list of models.

    Attributes:
        object_ (str): Always `list`.
        data (list[OpenAiModelBody]):
    """

    object_: str
    data: list[OpenAiModelBody]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        data = []
        for data_item_data in self.data:
            data_item = data_item_data.to_dict()
            data.append(data_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "object": object_,
                "data": data,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.open_ai_model_body import OpenAiModelBody  # noqa: PLC0415

        d = dict(src_dict)
        object_ = d.pop("object")

        data = []
        _data = d.pop("data")
        for data_item_data in _data:
            data_item = OpenAiModelBody.from_dict(data_item_data)

            data.append(data_item)

        open_ai_model_list = cls(
            object_=object_,
            data=data,
        )

        open_ai_model_list.additional_properties = d
        return open_ai_model_list

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
