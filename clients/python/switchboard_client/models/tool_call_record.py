from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tool_call_record_arguments import ToolCallRecordArguments


T = TypeVar("T", bound="ToolCallRecord")


@_attrs_define
class ToolCallRecord:
    """A tool call as the chat response reports it.

    Attributes:
        id (str):
        name (str):
        arguments (ToolCallRecordArguments): The arguments the model gave, as JSON.
        result (str):
        duration_ms (int):
        error (None | str | Unset):
    """

    id: str
    name: str
    arguments: ToolCallRecordArguments
    result: str
    duration_ms: int
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        arguments = self.arguments.to_dict()

        result = self.result

        duration_ms = self.duration_ms

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "arguments": arguments,
                "result": result,
                "durationMs": duration_ms,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.tool_call_record_arguments import ToolCallRecordArguments  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        arguments = ToolCallRecordArguments.from_dict(d.pop("arguments"))

        result = d.pop("result")

        duration_ms = d.pop("durationMs")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        tool_call_record = cls(
            id=id,
            name=name,
            arguments=arguments,
            result=result,
            duration_ms=duration_ms,
            error=error,
        )

        tool_call_record.additional_properties = d
        return tool_call_record

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
