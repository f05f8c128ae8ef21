from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PlanBody")


@_attrs_define
class PlanBody:
    """The tier's allowance.

    Attributes:
        monthly_credits (float):
        overage_rate (float):
        carryover_months (int):
    """

    monthly_credits: float
    overage_rate: float
    carryover_months: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        monthly_credits = self.monthly_credits

        overage_rate = self.overage_rate

        carryover_months = self.carryover_months

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "monthlyCredits": monthly_credits,
                "overageRate": overage_rate,
                "carryoverMonths": carryover_months,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        monthly_credits = d.pop("monthlyCredits")

        overage_rate = d.pop("overageRate")

        carryover_months = d.pop("carryoverMonths")

        plan_body = cls(
            monthly_credits=monthly_credits,
            overage_rate=overage_rate,
            carryover_months=carryover_months,
        )

        plan_body.additional_properties = d
        return plan_body

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
