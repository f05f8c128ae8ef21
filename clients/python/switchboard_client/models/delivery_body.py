from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.attempt_body import AttemptBody
    from ..models.delivery_body_payload import DeliveryBodyPayload


T = TypeVar("T", bound="DeliveryBody")


@_attrs_define
class DeliveryBody:
    """An event's delivery to one endpoint.

    Attributes:
        id (str):
        event_id (str): The event's id (the same on every endpoint it went to).
        type_ (str): The event type.
        status (str): `pending` (to be tried, or being tried), `delivered` (answered 2xx) or `failed`
            (given up after the retry window).
        created_at (str):
        payload (DeliveryBodyPayload): The body posted, as JSON: `{id, type, createdAt, data}`.
        attempts (list[AttemptBody]): Every attempt made, oldest first.
        next_attempt_at (None | str | Unset): When the next attempt is due, while `pending`.
        completed_at (None | str | Unset): When it was delivered or given up.
    """

    id: str
    event_id: str
    type_: str
    status: str
    created_at: str
    payload: DeliveryBodyPayload
    attempts: list[AttemptBody]
    next_attempt_at: None | str | Unset = UNSET
    completed_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        event_id = self.event_id

        type_ = self.type_

        status = self.status

        created_at = self.created_at

        payload = self.payload.to_dict()

        attempts = []
        for attempts_item_data in self.attempts:
            attempts_item = attempts_item_data.to_dict()
            attempts.append(attempts_item)

        next_attempt_at: None | str | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        else:
            next_attempt_at = self.next_attempt_at

        completed_at: None | str | Unset
        if isinstance(self.completed_at, Unset):
            completed_at = UNSET
        else:
            completed_at = self.completed_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "eventId": event_id,
                "type": type_,
                "status": status,
                "createdAt": created_at,
                "payload": payload,
                "attempts": attempts,
            }
        )
        if next_attempt_at is not UNSET:
            field_dict["nextAttemptAt"] = next_attempt_at
        if completed_at is not UNSET:
            field_dict["completedAt"] = completed_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.attempt_body import AttemptBody  # noqa: PLC0415
        from ..models.delivery_body_payload import DeliveryBodyPayload  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        event_id = d.pop("eventId")

        type_ = d.pop("type")

        status = d.pop("status")

        created_at = d.pop("createdAt")

        payload = DeliveryBodyPayload.from_dict(d.pop("payload"))

        attempts = []
        _attempts = d.pop("attempts")
        for attempts_item_data in _attempts:
            attempts_item = AttemptBody.from_dict(attempts_item_data)

            attempts.append(attempts_item)

        def _parse_next_attempt_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("nextAttemptAt", UNSET))

        def _parse_completed_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        completed_at = _parse_completed_at(d.pop("completedAt", UNSET))

        delivery_body = cls(
            id=id,
            event_id=event_id,
            type_=type_,
            status=status,
            created_at=created_at,
            payload=payload,
            attempts=attempts,
            next_attempt_at=next_attempt_at,
            completed_at=completed_at,
        )

        delivery_body.additional_properties = d
        return delivery_body

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
