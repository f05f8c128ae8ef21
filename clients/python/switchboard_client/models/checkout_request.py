from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="CheckoutRequest")


@_attrs_define
class CheckoutRequest:
    """
    Attributes:
        tier (None | str | Unset): `starter`, `pro` or `scale`.
        success_url (None | str | Unset): Where the processor sends the customer after paying (http or https).
        cancel_url (None | str | Unset): Where the processor sends the customer after cancelling (http or https).
    """

    tier: None | str | Unset = UNSET
    success_url: None | str | Unset = UNSET
    cancel_url: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        tier: None | str | Unset
        if isinstance(self.tier, Unset):
            tier = UNSET
        else:
            tier = self.tier

        success_url: None | str | Unset
        if isinstance(self.success_url, Unset):
            success_url = UNSET
        else:
            success_url = self.success_url

        cancel_url: None | str | Unset
        if isinstance(self.cancel_url, Unset):
            cancel_url = UNSET
        else:
            cancel_url = self.cancel_url

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if tier is not UNSET:
            field_dict["tier"] = tier
        if success_url is not UNSET:
            field_dict["successUrl"] = success_url
        if cancel_url is not UNSET:
            field_dict["cancelUrl"] = cancel_url

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_tier(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tier = _parse_tier(d.pop("tier", UNSET))

        def _parse_success_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        success_url = _parse_success_url(d.pop("successUrl", UNSET))

        def _parse_cancel_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cancel_url = _parse_cancel_url(d.pop("cancelUrl", UNSET))

        checkout_request = cls(
            tier=tier,
            success_url=success_url,
            cancel_url=cancel_url,
        )

        return checkout_request
