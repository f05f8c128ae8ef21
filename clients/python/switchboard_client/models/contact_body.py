from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.contact_body_variables import ContactBodyVariables


T = TypeVar("T", bound="ContactBody")


@_attrs_define
class ContactBody:
    """
    Attributes:
        index (int): Its place in the request's `contacts`, from 0.
        to (str):
        variables (ContactBodyVariables):
        status (str): `pending` (waiting for its next call), `calling`, or how it ended: `completed` (the
            call was answered), `no-answer`, `busy`, `failed`, `canceled`.
        attempts (int): Calls placed to it so far.
        updated_at (str):
        next_attempt_at (None | str | Unset): When its next call may start, while `pending`.
        task_id (None | str | Unset): The outbound call task of its latest call (`GET
            /v1/sessions/twilio/tasks/{taskId}`:
            call SID, session, answering-machine verdict).
        last_outcome (None | str | Unset): How its latest attempt ended: a task status, `no-free-line` or `no-credits`
            (not
            placed, tried again).
        error (None | str | Unset):
    """

    index: int
    to: str
    variables: ContactBodyVariables
    status: str
    attempts: int
    updated_at: str
    next_attempt_at: None | str | Unset = UNSET
    task_id: None | str | Unset = UNSET
    last_outcome: None | str | Unset = UNSET
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index

        to = self.to

        variables = self.variables.to_dict()

        status = self.status

        attempts = self.attempts

        updated_at = self.updated_at

        next_attempt_at: None | str | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        else:
            next_attempt_at = self.next_attempt_at

        task_id: None | str | Unset
        if isinstance(self.task_id, Unset):
            task_id = UNSET
        else:
            task_id = self.task_id

        last_outcome: None | str | Unset
        if isinstance(self.last_outcome, Unset):
            last_outcome = UNSET
        else:
            last_outcome = self.last_outcome

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "to": to,
                "variables": variables,
                "status": status,
                "attempts": attempts,
                "updatedAt": updated_at,
            }
        )
        if next_attempt_at is not UNSET:
            field_dict["nextAttemptAt"] = next_attempt_at
        if task_id is not UNSET:
            field_dict["taskId"] = task_id
        if last_outcome is not UNSET:
            field_dict["lastOutcome"] = last_outcome
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.contact_body_variables import ContactBodyVariables  # noqa: PLC0415

        d = dict(src_dict)
        index = d.pop("index")

        to = d.pop("to")

        variables = ContactBodyVariables.from_dict(d.pop("variables"))

        status = d.pop("status")

        attempts = d.pop("attempts")

        updated_at = d.pop("updatedAt")

        def _parse_next_attempt_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("nextAttemptAt", UNSET))

        def _parse_task_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        task_id = _parse_task_id(d.pop("taskId", UNSET))

        def _parse_last_outcome(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_outcome = _parse_last_outcome(d.pop("lastOutcome", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        contact_body = cls(
            index=index,
            to=to,
            variables=variables,
            status=status,
            attempts=attempts,
            updated_at=updated_at,
            next_attempt_at=next_attempt_at,
            task_id=task_id,
            last_outcome=last_outcome,
            error=error,
        )

        contact_body.additional_properties = d
        return contact_body

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
