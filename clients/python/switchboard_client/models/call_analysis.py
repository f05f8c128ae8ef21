from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.call_analysis_data_type_0 import CallAnalysisDataType0


T = TypeVar("T", bound="CallAnalysis")


@_attrs_define
class CallAnalysis:
    """A session's post-call analysis as the API (`GET /v1/observability/sessions/{id}`) and
    `call.analyzed` show it.

        Attributes:
            status (str): `pending` (running), `completed` (at least one part answered) or `failed`.
            errors (list[str]): What could not be answered, in words (`data: the extracted fields do not match…`).
            input_tokens (int):
            output_tokens (int):
            created_at (str):
            summary (None | str | Unset): A few sentences on who called, what they wanted and how it ended; `null` when not
                asked for or not answered.
            success (bool | None | Unset): Whether the call met the agent's `successCriteria`; `null` when not asked or not
                answered.
            success_reason (None | str | Unset): Why, in one sentence.
            data (CallAnalysisDataType0 | None | Unset): The fields extracted, valid against the agent's `dataSchema`;
                `null` when not asked or
                not answered.
            provider (None | str | Unset): The language model's provider that answered.
            completed_at (None | str | Unset):
    """

    status: str
    errors: list[str]
    input_tokens: int
    output_tokens: int
    created_at: str
    summary: None | str | Unset = UNSET
    success: bool | None | Unset = UNSET
    success_reason: None | str | Unset = UNSET
    data: CallAnalysisDataType0 | None | Unset = UNSET
    provider: None | str | Unset = UNSET
    completed_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.call_analysis_data_type_0 import CallAnalysisDataType0  # noqa: PLC0415

        status = self.status

        errors = self.errors

        input_tokens = self.input_tokens

        output_tokens = self.output_tokens

        created_at = self.created_at

        summary: None | str | Unset
        if isinstance(self.summary, Unset):
            summary = UNSET
        else:
            summary = self.summary

        success: bool | None | Unset
        if isinstance(self.success, Unset):
            success = UNSET
        else:
            success = self.success

        success_reason: None | str | Unset
        if isinstance(self.success_reason, Unset):
            success_reason = UNSET
        else:
            success_reason = self.success_reason

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, CallAnalysisDataType0):
            data = self.data.to_dict()
        else:
            data = self.data

        provider: None | str | Unset
        if isinstance(self.provider, Unset):
            provider = UNSET
        else:
            provider = self.provider

        completed_at: None | str | Unset
        if isinstance(self.completed_at, Unset):
            completed_at = UNSET
        else:
            completed_at = self.completed_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "errors": errors,
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
                "createdAt": created_at,
            }
        )
        if summary is not UNSET:
            field_dict["summary"] = summary
        if success is not UNSET:
            field_dict["success"] = success
        if success_reason is not UNSET:
            field_dict["successReason"] = success_reason
        if data is not UNSET:
            field_dict["data"] = data
        if provider is not UNSET:
            field_dict["provider"] = provider
        if completed_at is not UNSET:
            field_dict["completedAt"] = completed_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.call_analysis_data_type_0 import CallAnalysisDataType0  # noqa: PLC0415

        d = dict(src_dict)
        status = d.pop("status")

        errors = cast(list[str], d.pop("errors"))

        input_tokens = d.pop("inputTokens")

        output_tokens = d.pop("outputTokens")

        created_at = d.pop("createdAt")

        def _parse_summary(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        summary = _parse_summary(d.pop("summary", UNSET))

        def _parse_success(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        success = _parse_success(d.pop("success", UNSET))

        def _parse_success_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        success_reason = _parse_success_reason(d.pop("successReason", UNSET))

        def _parse_data(data: object) -> CallAnalysisDataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = CallAnalysisDataType0.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CallAnalysisDataType0 | None | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        def _parse_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider = _parse_provider(d.pop("provider", UNSET))

        def _parse_completed_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        completed_at = _parse_completed_at(d.pop("completedAt", UNSET))

        call_analysis = cls(
            status=status,
            errors=errors,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            created_at=created_at,
            summary=summary,
            success=success,
            success_reason=success_reason,
            data=data,
            provider=provider,
            completed_at=completed_at,
        )

        call_analysis.additional_properties = d
        return call_analysis

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
