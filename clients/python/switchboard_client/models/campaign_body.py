from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.campaign_body_window_type_0 import CampaignBodyWindowType0
    from ..models.contact_body import ContactBody
    from ..models.contact_counts_body import ContactCountsBody
    from ..models.retry_body import RetryBody


T = TypeVar("T", bound="CampaignBody")


@_attrs_define
class CampaignBody:
    """
    Attributes:
        id (str):
        agent_id (str):
        from_ (str):
        status (str): `active` (placing calls), `paused`, `completed` (every contact reached an end) or
            `canceled`.
        max_concurrent (int):
        retry (RetryBody):
        machine_detection (str):
        record (bool):
        counts (ContactCountsBody): How many contacts are in each state.
        created_at (str):
        updated_at (str):
        name (None | str | Unset):
        status_reason (None | str | Unset): Why the campaign paused by itself (`insufficient_credits: …`); null
            otherwise.
        window (CampaignBodyWindowType0 | None | Unset):
        contacts (list[ContactBody] | None | Unset): Every contact with its state (on the campaign's own routes; not in
            lists).
        completed_at (None | str | Unset):
    """

    id: str
    agent_id: str
    from_: str
    status: str
    max_concurrent: int
    retry: RetryBody
    machine_detection: str
    record: bool
    counts: ContactCountsBody
    created_at: str
    updated_at: str
    name: None | str | Unset = UNSET
    status_reason: None | str | Unset = UNSET
    window: CampaignBodyWindowType0 | None | Unset = UNSET
    contacts: list[ContactBody] | None | Unset = UNSET
    completed_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.campaign_body_window_type_0 import CampaignBodyWindowType0  # noqa: PLC0415

        id = self.id

        agent_id = self.agent_id

        from_ = self.from_

        status = self.status

        max_concurrent = self.max_concurrent

        retry = self.retry.to_dict()

        machine_detection = self.machine_detection

        record = self.record

        counts = self.counts.to_dict()

        created_at = self.created_at

        updated_at = self.updated_at

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        status_reason: None | str | Unset
        if isinstance(self.status_reason, Unset):
            status_reason = UNSET
        else:
            status_reason = self.status_reason

        window: dict[str, Any] | None | Unset
        if isinstance(self.window, Unset):
            window = UNSET
        elif isinstance(self.window, CampaignBodyWindowType0):
            window = self.window.to_dict()
        else:
            window = self.window

        contacts: list[dict[str, Any]] | None | Unset
        if isinstance(self.contacts, Unset):
            contacts = UNSET
        elif isinstance(self.contacts, list):
            contacts = []
            for contacts_type_0_item_data in self.contacts:
                contacts_type_0_item = contacts_type_0_item_data.to_dict()
                contacts.append(contacts_type_0_item)

        else:
            contacts = self.contacts

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
                "agentId": agent_id,
                "from": from_,
                "status": status,
                "maxConcurrent": max_concurrent,
                "retry": retry,
                "machineDetection": machine_detection,
                "record": record,
                "counts": counts,
                "createdAt": created_at,
                "updatedAt": updated_at,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if status_reason is not UNSET:
            field_dict["statusReason"] = status_reason
        if window is not UNSET:
            field_dict["window"] = window
        if contacts is not UNSET:
            field_dict["contacts"] = contacts
        if completed_at is not UNSET:
            field_dict["completedAt"] = completed_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.campaign_body_window_type_0 import CampaignBodyWindowType0  # noqa: PLC0415
        from ..models.contact_body import ContactBody  # noqa: PLC0415
        from ..models.contact_counts_body import ContactCountsBody  # noqa: PLC0415
        from ..models.retry_body import RetryBody  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        agent_id = d.pop("agentId")

        from_ = d.pop("from")

        status = d.pop("status")

        max_concurrent = d.pop("maxConcurrent")

        retry = RetryBody.from_dict(d.pop("retry"))

        machine_detection = d.pop("machineDetection")

        record = d.pop("record")

        counts = ContactCountsBody.from_dict(d.pop("counts"))

        created_at = d.pop("createdAt")

        updated_at = d.pop("updatedAt")

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_status_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        status_reason = _parse_status_reason(d.pop("statusReason", UNSET))

        def _parse_window(data: object) -> CampaignBodyWindowType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                window_type_0 = CampaignBodyWindowType0.from_dict(data)

                return window_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CampaignBodyWindowType0 | None | Unset, data)

        window = _parse_window(d.pop("window", UNSET))

        def _parse_contacts(data: object) -> list[ContactBody] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                contacts_type_0 = []
                _contacts_type_0 = data
                for contacts_type_0_item_data in _contacts_type_0:
                    contacts_type_0_item = ContactBody.from_dict(contacts_type_0_item_data)

                    contacts_type_0.append(contacts_type_0_item)

                return contacts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ContactBody] | None | Unset, data)

        contacts = _parse_contacts(d.pop("contacts", UNSET))

        def _parse_completed_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        completed_at = _parse_completed_at(d.pop("completedAt", UNSET))

        campaign_body = cls(
            id=id,
            agent_id=agent_id,
            from_=from_,
            status=status,
            max_concurrent=max_concurrent,
            retry=retry,
            machine_detection=machine_detection,
            record=record,
            counts=counts,
            created_at=created_at,
            updated_at=updated_at,
            name=name,
            status_reason=status_reason,
            window=window,
            contacts=contacts,
            completed_at=completed_at,
        )

        campaign_body.additional_properties = d
        return campaign_body

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
