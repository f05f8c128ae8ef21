from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent_fields_analysis_type_0_data_schema_type_0 import AgentFieldsAnalysisType0DataSchemaType0


T = TypeVar("T", bound="AgentFieldsAnalysisType0")


@_attrs_define
class AgentFieldsAnalysisType0:
    """Post-call analysis: after each of the agent's calls, its language model reads the transcript and writes what is
    asked here, stored on the session (`GET /v1/observability/sessions/{id}`, `analysis`) and sent as the
    `call.analyzed` webhook. `{summary, successCriteria, dataSchema}`: `summary` (default true) a few sentences on who
    called, what they wanted and how it ended; `successCriteria` (1-2000 characters) what a successful call achieves,
    judged yes or no with a reason; `dataSchema` a JSON Schema of an object (1-50 properties, at most 16 KiB, no
    references outside it) whose fields are extracted from the call and checked against it. `null` turns analysis off.

        Attributes:
            summary (bool | Unset):  Default: True.
            success_criteria (None | str | Unset):
            data_schema (AgentFieldsAnalysisType0DataSchemaType0 | None | Unset): A JSON Schema with "type": "object" and
                1-50 properties.
    """

    summary: bool | Unset = True
    success_criteria: None | str | Unset = UNSET
    data_schema: AgentFieldsAnalysisType0DataSchemaType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.agent_fields_analysis_type_0_data_schema_type_0 import AgentFieldsAnalysisType0DataSchemaType0  # noqa: PLC0415

        summary = self.summary

        success_criteria: None | str | Unset
        if isinstance(self.success_criteria, Unset):
            success_criteria = UNSET
        else:
            success_criteria = self.success_criteria

        data_schema: dict[str, Any] | None | Unset
        if isinstance(self.data_schema, Unset):
            data_schema = UNSET
        elif isinstance(self.data_schema, AgentFieldsAnalysisType0DataSchemaType0):
            data_schema = self.data_schema.to_dict()
        else:
            data_schema = self.data_schema

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if summary is not UNSET:
            field_dict["summary"] = summary
        if success_criteria is not UNSET:
            field_dict["successCriteria"] = success_criteria
        if data_schema is not UNSET:
            field_dict["dataSchema"] = data_schema

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.agent_fields_analysis_type_0_data_schema_type_0 import AgentFieldsAnalysisType0DataSchemaType0  # noqa: PLC0415

        d = dict(src_dict)
        summary = d.pop("summary", UNSET)

        def _parse_success_criteria(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        success_criteria = _parse_success_criteria(d.pop("successCriteria", UNSET))

        def _parse_data_schema(data: object) -> AgentFieldsAnalysisType0DataSchemaType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_schema_type_0 = AgentFieldsAnalysisType0DataSchemaType0.from_dict(data)

                return data_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AgentFieldsAnalysisType0DataSchemaType0 | None | Unset, data)

        data_schema = _parse_data_schema(d.pop("dataSchema", UNSET))

        agent_fields_analysis_type_0 = cls(
            summary=summary,
            success_criteria=success_criteria,
            data_schema=data_schema,
        )

        return agent_fields_analysis_type_0
