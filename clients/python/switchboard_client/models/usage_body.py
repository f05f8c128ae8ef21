from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.breakdown_body import BreakdownBody
    from ..models.credits_body import CreditsBody
    from ..models.overage_body import OverageBody


T = TypeVar("T", bound="UsageBody")


@_attrs_define
class UsageBody:
    """`GET /v1/usage`.

    Attributes:
        credits_ (CreditsBody): Credits of the current billing period.
        breakdown (BreakdownBody): Credits used per kind of work.
        request_count (int): Authenticated requests this period.
        carryover (float): Unused credits of earlier periods included in the limit.
        overage (OverageBody): Use beyond the limit on tiers that allow overage.
        period (str): The billing period, a UTC calendar month (`2026-11`).
        period_ends_at (None | str | Unset):
    """

    credits_: CreditsBody
    breakdown: BreakdownBody
    request_count: int
    carryover: float
    overage: OverageBody
    period: str
    period_ends_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        credits_ = self.credits_.to_dict()

        breakdown = self.breakdown.to_dict()

        request_count = self.request_count

        carryover = self.carryover

        overage = self.overage.to_dict()

        period = self.period

        period_ends_at: None | str | Unset
        if isinstance(self.period_ends_at, Unset):
            period_ends_at = UNSET
        else:
            period_ends_at = self.period_ends_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "credits": credits_,
                "breakdown": breakdown,
                "requestCount": request_count,
                "carryover": carryover,
                "overage": overage,
                "period": period,
            }
        )
        if period_ends_at is not UNSET:
            field_dict["periodEndsAt"] = period_ends_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.breakdown_body import BreakdownBody  # noqa: PLC0415
        from ..models.credits_body import CreditsBody  # noqa: PLC0415
        from ..models.overage_body import OverageBody  # noqa: PLC0415

        d = dict(src_dict)
        credits_ = CreditsBody.from_dict(d.pop("credits"))

        breakdown = BreakdownBody.from_dict(d.pop("breakdown"))

        request_count = d.pop("requestCount")

        carryover = d.pop("carryover")

        overage = OverageBody.from_dict(d.pop("overage"))

        period = d.pop("period")

        def _parse_period_ends_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        period_ends_at = _parse_period_ends_at(d.pop("periodEndsAt", UNSET))

        usage_body = cls(
            credits_=credits_,
            breakdown=breakdown,
            request_count=request_count,
            carryover=carryover,
            overage=overage,
            period=period,
            period_ends_at=period_ends_at,
        )

        usage_body.additional_properties = d
        return usage_body

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
