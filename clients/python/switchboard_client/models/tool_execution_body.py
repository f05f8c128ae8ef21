from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ToolExecutionBody")


@_attrs_define
class ToolExecutionBody:
    """
    Attributes:
        id (str): The model's call id.
        name (str):
        arguments (str): The arguments as the model wrote them (JSON text).
        output (str): What the tool answered (or the error handed to the model).
        is_error (bool):
        duration_ms (int):
    """

    id: str
    name: str
    arguments: str
    output: str
    is_error: bool
    duration_ms: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        arguments = self.arguments

        output = self.output

        is_error = self.is_error

        duration_ms = self.duration_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "arguments": arguments,
                "output": output,
                "isError": is_error,
                "durationMs": duration_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        arguments = d.pop("arguments")

        output = d.pop("output")

        is_error = d.pop("isError")

        duration_ms = d.pop("durationMs")

        tool_execution_body = cls(
            id=id,
            name=name,
            arguments=arguments,
            output=output,
            is_error=is_error,
            duration_ms=duration_ms,
        )

        tool_execution_body.additional_properties = d
        return tool_execution_body

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
