from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ChatRequestBody")


@_attrs_define
class ChatRequestBody:
    """
    Attributes:
        message (None | str | Unset): 1-10,000 characters.
        conversation_id (None | str | Unset): Continues a stored conversation with this agent; a new one starts when
            absent.
        instance_id (None | str | Unset): An instance of the agent whose context and variables personalise the prompt.
        caller_phone (None | str | Unset): E.164; picks the agent's instance with this phone number, if there is one.
        max_steps (int | None | Unset): 1-8, default 5: tool rounds per turn.
    """

    message: None | str | Unset = UNSET
    conversation_id: None | str | Unset = UNSET
    instance_id: None | str | Unset = UNSET
    caller_phone: None | str | Unset = UNSET
    max_steps: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        message: None | str | Unset
        if isinstance(self.message, Unset):
            message = UNSET
        else:
            message = self.message

        conversation_id: None | str | Unset
        if isinstance(self.conversation_id, Unset):
            conversation_id = UNSET
        else:
            conversation_id = self.conversation_id

        instance_id: None | str | Unset
        if isinstance(self.instance_id, Unset):
            instance_id = UNSET
        else:
            instance_id = self.instance_id

        caller_phone: None | str | Unset
        if isinstance(self.caller_phone, Unset):
            caller_phone = UNSET
        else:
            caller_phone = self.caller_phone

        max_steps: int | None | Unset
        if isinstance(self.max_steps, Unset):
            max_steps = UNSET
        else:
            max_steps = self.max_steps

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if message is not UNSET:
            field_dict["message"] = message
        if conversation_id is not UNSET:
            field_dict["conversationId"] = conversation_id
        if instance_id is not UNSET:
            field_dict["instanceId"] = instance_id
        if caller_phone is not UNSET:
            field_dict["callerPhone"] = caller_phone
        if max_steps is not UNSET:
            field_dict["maxSteps"] = max_steps

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_message(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message = _parse_message(d.pop("message", UNSET))

        def _parse_conversation_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        conversation_id = _parse_conversation_id(d.pop("conversationId", UNSET))

        def _parse_instance_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_id = _parse_instance_id(d.pop("instanceId", UNSET))

        def _parse_caller_phone(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        caller_phone = _parse_caller_phone(d.pop("callerPhone", UNSET))

        def _parse_max_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_steps = _parse_max_steps(d.pop("maxSteps", UNSET))

        chat_request_body = cls(
            message=message,
            conversation_id=conversation_id,
            instance_id=instance_id,
            caller_phone=caller_phone,
            max_steps=max_steps,
        )

        return chat_request_body
