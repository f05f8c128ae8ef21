from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.credits_body import CreditsBody
    from ..models.plan_body import PlanBody


T = TypeVar("T", bound="SubscriptionBody")


@_attrs_define
class SubscriptionBody:
    """`GET /v1/billing/subscription`.

    Attributes:
        tier (str): `starter`, `pro` or `scale`.
        tier_display (str):
        credits_ (CreditsBody): Credits of the current billing period.
        plan (PlanBody): The tier's allowance.
        stripe_customer_id (None | str | Unset): The payment processor's customer id, once checkout or the portal
            created one.
        tier_expires_at (None | str | Unset): When the paid tier lapses unless renewed; null on the free tier.
    """

    tier: str
    tier_display: str
    credits_: CreditsBody
    plan: PlanBody
    stripe_customer_id: None | str | Unset = UNSET
    tier_expires_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tier = self.tier

        tier_display = self.tier_display

        credits_ = self.credits_.to_dict()

        plan = self.plan.to_dict()

        stripe_customer_id: None | str | Unset
        if isinstance(self.stripe_customer_id, Unset):
            stripe_customer_id = UNSET
        else:
            stripe_customer_id = self.stripe_customer_id

        tier_expires_at: None | str | Unset
        if isinstance(self.tier_expires_at, Unset):
            tier_expires_at = UNSET
        else:
            tier_expires_at = self.tier_expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tier": tier,
                "tierDisplay": tier_display,
                "credits": credits_,
                "plan": plan,
            }
        )
        if stripe_customer_id is not UNSET:
            field_dict["stripeCustomerId"] = stripe_customer_id
        if tier_expires_at is not UNSET:
            field_dict["tierExpiresAt"] = tier_expires_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.credits_body import CreditsBody  # noqa: PLC0415
        from ..models.plan_body import PlanBody  # noqa: PLC0415

        d = dict(src_dict)
        tier = d.pop("tier")

        tier_display = d.pop("tierDisplay")

        credits_ = CreditsBody.from_dict(d.pop("credits"))

        plan = PlanBody.from_dict(d.pop("plan"))

        def _parse_stripe_customer_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stripe_customer_id = _parse_stripe_customer_id(d.pop("stripeCustomerId", UNSET))

        def _parse_tier_expires_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tier_expires_at = _parse_tier_expires_at(d.pop("tierExpiresAt", UNSET))

        subscription_body = cls(
            tier=tier,
            tier_display=tier_display,
            credits_=credits_,
            plan=plan,
            stripe_customer_id=stripe_customer_id,
            tier_expires_at=tier_expires_at,
        )

        subscription_body.additional_properties = d
        return subscription_body

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
