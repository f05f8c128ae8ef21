from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.token_usage_body import TokenUsageBody
    from ..models.tool_call_record import ToolCallRecord


T = TypeVar("T", bound="ChatResponseBody")


@_attrs_define
class ChatResponseBody:
    """
    Attributes:
        reply (str):
        conversation_id (str):
        turn_index (int): 0 for a conversation's first turn.
        tool_calls (list[ToolCallRecord]):
        usage (TokenUsageBody): Tokens one chat turn used. (Named apart from `GET /v1/usage`'s `UsageBody`: the OpenAPI
            document keys schemas by name, and one name for both made chat answers fail their schema.)
        ended (bool): True when the agent ended the conversation (it then takes no more turns).
        instance_id (None | str | Unset): The instance that personalised this turn, if any.
    """

    reply: str
    conversation_id: str
    turn_index: int
    tool_calls: list[ToolCallRecord]
    usage: TokenUsageBody
    ended: bool
    instance_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reply = self.reply

        conversation_id = self.conversation_id

        turn_index = self.turn_index

        tool_calls = []
        for tool_calls_item_data in self.tool_calls:
            tool_calls_item = tool_calls_item_data.to_dict()
            tool_calls.append(tool_calls_item)

        usage = self.usage.to_dict()

        ended = self.ended

        instance_id: None | str | Unset
        if isinstance(self.instance_id, Unset):
            instance_id = UNSET
        else:
            instance_id = self.instance_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "reply": reply,
                "conversationId": conversation_id,
                "turnIndex": turn_index,
                "toolCalls": tool_calls,
                "usage": usage,
                "ended": ended,
            }
        )
        if instance_id is not UNSET:
            field_dict["instanceId"] = instance_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.token_usage_body import TokenUsageBody  # noqa: PLC0415
        from ..models.tool_call_record import ToolCallRecord  # noqa: PLC0415

        d = dict(src_dict)
        reply = d.pop("reply")

        conversation_id = d.pop("conversationId")

        turn_index = d.pop("turnIndex")

        tool_calls = []
        _tool_calls = d.pop("toolCalls")
        for tool_calls_item_data in _tool_calls:
            tool_calls_item = ToolCallRecord.from_dict(tool_calls_item_data)

            tool_calls.append(tool_calls_item)

        usage = TokenUsageBody.from_dict(d.pop("usage"))

        ended = d.pop("ended")

        def _parse_instance_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        instance_id = _parse_instance_id(d.pop("instanceId", UNSET))

        chat_response_body = cls(
            reply=reply,
            conversation_id=conversation_id,
            turn_index=turn_index,
            tool_calls=tool_calls,
            usage=usage,
            ended=ended,
            instance_id=instance_id,
        )

        chat_response_body.additional_properties = d
        return chat_response_body

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
