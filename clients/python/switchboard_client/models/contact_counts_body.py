from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ContactCountsBody")


@_attrs_define
class ContactCountsBody:
    """How many contacts are in each state.

    Attributes:
        pending (int):
        calling (int):
        completed (int):
        no_answer (int):
        busy (int):
        failed (int):
        canceled (int):
    """

    pending: int
    calling: int
    completed: int
    no_answer: int
    busy: int
    failed: int
    canceled: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        pending = self.pending

        calling = self.calling

        completed = self.completed

        no_answer = self.no_answer

        busy = self.busy

        failed = self.failed

        canceled = self.canceled

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "pending": pending,
                "calling": calling,
                "completed": completed,
                "noAnswer": no_answer,
                "busy": busy,
                "failed": failed,
                "canceled": canceled,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        pending = d.pop("pending")

        calling = d.pop("calling")

        completed = d.pop("completed")

        no_answer = d.pop("noAnswer")

        busy = d.pop("busy")

        failed = d.pop("failed")

        canceled = d.pop("canceled")

        contact_counts_body = cls(
            pending=pending,
            calling=calling,
            completed=completed,
            no_answer=no_answer,
            busy=busy,
            failed=failed,
            canceled=canceled,
        )

        contact_counts_body.additional_properties = d
        return contact_counts_body

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
