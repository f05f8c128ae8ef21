from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.machine_detection import MachineDetection
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.campaign_request_window_type_0 import CampaignRequestWindowType0
    from ..models.contact_request import ContactRequest
    from ..models.retry_request import RetryRequest


T = TypeVar("T", bound="CampaignRequest")


@_attrs_define
class CampaignRequest:
    """
    Attributes:
        agent_id (None | str | Unset): The agent that talks on every call.
        from_ (None | str | Unset): The caller id, E.164: one of your verified numbers in `/v1/phone-numbers`.
        name (None | str | Unset): Up to 100 characters.
        contacts (list[ContactRequest] | None | Unset): Who to call, in order: 1 to `campaigns.max_contacts` (1000),
            each number once.
        max_concurrent (int | None | Unset): Calls in progress at once, 1-50 (default 1). The tier's concurrent sessions
            bound them
            too: a call with no free line waits and is tried again without counting an attempt.
        window (CampaignRequestWindowType0 | None | Unset): Calling hours: `{start: "HH:MM", end: "HH:MM", timezone:
            "America/New_York" (default
            UTC), days: ["mon", …] (default every day)}`. Calls start only inside them; an `end`
            before `start` runs past midnight. Default: any time.
        retry (None | RetryRequest | Unset):
        machine_detection (MachineDetection | None | Unset):
        voicemail_message (None | str | Unset): As on `POST /v1/sessions/twilio/outbound`.
        record (bool | None | Unset): Also have Twilio record the calls on its side (default false).
    """

    agent_id: None | str | Unset = UNSET
    from_: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    contacts: list[ContactRequest] | None | Unset = UNSET
    max_concurrent: int | None | Unset = UNSET
    window: CampaignRequestWindowType0 | None | Unset = UNSET
    retry: None | RetryRequest | Unset = UNSET
    machine_detection: MachineDetection | None | Unset = UNSET
    voicemail_message: None | str | Unset = UNSET
    record: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.campaign_request_window_type_0 import CampaignRequestWindowType0  # noqa: PLC0415
        from ..models.retry_request import RetryRequest  # noqa: PLC0415

        agent_id: None | str | Unset
        if isinstance(self.agent_id, Unset):
            agent_id = UNSET
        else:
            agent_id = self.agent_id

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        else:
            from_ = self.from_

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

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

        max_concurrent: int | None | Unset
        if isinstance(self.max_concurrent, Unset):
            max_concurrent = UNSET
        else:
            max_concurrent = self.max_concurrent

        window: dict[str, Any] | None | Unset
        if isinstance(self.window, Unset):
            window = UNSET
        elif isinstance(self.window, CampaignRequestWindowType0):
            window = self.window.to_dict()
        else:
            window = self.window

        retry: dict[str, Any] | None | Unset
        if isinstance(self.retry, Unset):
            retry = UNSET
        elif isinstance(self.retry, RetryRequest):
            retry = self.retry.to_dict()
        else:
            retry = self.retry

        machine_detection: None | str | Unset
        if isinstance(self.machine_detection, Unset):
            machine_detection = UNSET
        elif isinstance(self.machine_detection, MachineDetection):
            machine_detection = self.machine_detection.value
        else:
            machine_detection = self.machine_detection

        voicemail_message: None | str | Unset
        if isinstance(self.voicemail_message, Unset):
            voicemail_message = UNSET
        else:
            voicemail_message = self.voicemail_message

        record: bool | None | Unset
        if isinstance(self.record, Unset):
            record = UNSET
        else:
            record = self.record

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if agent_id is not UNSET:
            field_dict["agentId"] = agent_id
        if from_ is not UNSET:
            field_dict["from"] = from_
        if name is not UNSET:
            field_dict["name"] = name
        if contacts is not UNSET:
            field_dict["contacts"] = contacts
        if max_concurrent is not UNSET:
            field_dict["maxConcurrent"] = max_concurrent
        if window is not UNSET:
            field_dict["window"] = window
        if retry is not UNSET:
            field_dict["retry"] = retry
        if machine_detection is not UNSET:
            field_dict["machineDetection"] = machine_detection
        if voicemail_message is not UNSET:
            field_dict["voicemailMessage"] = voicemail_message
        if record is not UNSET:
            field_dict["record"] = record

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.campaign_request_window_type_0 import CampaignRequestWindowType0  # noqa: PLC0415
        from ..models.contact_request import ContactRequest  # noqa: PLC0415
        from ..models.retry_request import RetryRequest  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_agent_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent_id = _parse_agent_id(d.pop("agentId", UNSET))

        def _parse_from_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_contacts(data: object) -> list[ContactRequest] | None | Unset:
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
                    contacts_type_0_item = ContactRequest.from_dict(contacts_type_0_item_data)

                    contacts_type_0.append(contacts_type_0_item)

                return contacts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ContactRequest] | None | Unset, data)

        contacts = _parse_contacts(d.pop("contacts", UNSET))

        def _parse_max_concurrent(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_concurrent = _parse_max_concurrent(d.pop("maxConcurrent", UNSET))

        def _parse_window(data: object) -> CampaignRequestWindowType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                window_type_0 = CampaignRequestWindowType0.from_dict(data)

                return window_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CampaignRequestWindowType0 | None | Unset, data)

        window = _parse_window(d.pop("window", UNSET))

        def _parse_retry(data: object) -> None | RetryRequest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                retry_type_1 = RetryRequest.from_dict(data)

                return retry_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RetryRequest | Unset, data)

        retry = _parse_retry(d.pop("retry", UNSET))

        def _parse_machine_detection(data: object) -> MachineDetection | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                machine_detection_type_1 = MachineDetection(data)

                return machine_detection_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MachineDetection | None | Unset, data)

        machine_detection = _parse_machine_detection(d.pop("machineDetection", UNSET))

        def _parse_voicemail_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        voicemail_message = _parse_voicemail_message(d.pop("voicemailMessage", UNSET))

        def _parse_record(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        record = _parse_record(d.pop("record", UNSET))

        campaign_request = cls(
            agent_id=agent_id,
            from_=from_,
            name=name,
            contacts=contacts,
            max_concurrent=max_concurrent,
            window=window,
            retry=retry,
            machine_detection=machine_detection,
            voicemail_message=voicemail_message,
            record=record,
        )

        return campaign_request
