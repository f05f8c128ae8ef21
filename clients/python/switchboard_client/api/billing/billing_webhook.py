from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.billing_webhook_body import BillingWebhookBody
from ...models.error_body import ErrorBody
from ...models.webhook_receipt_body import WebhookReceiptBody
from ...types import Response


def _get_kwargs(
    *,
    body: BillingWebhookBody,
    stripe_signature: str,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    headers["Stripe-Signature"] = stripe_signature

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/billing/webhook",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | WebhookReceiptBody | None:
    if response.status_code == 200:
        response_200 = WebhookReceiptBody.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400

    if response.status_code == 408:
        response_408 = ErrorBody.from_dict(response.json())

        return response_408

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = ErrorBody.from_dict(response.json())

        return response_415

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorBody | WebhookReceiptBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: BillingWebhookBody,
    stripe_signature: str,
) -> Response[ErrorBody | WebhookReceiptBody]:
    """The payment processor's webhook. Authenticated by `Stripe-Signature` (HMAC-SHA256 of
    `t.payload`, 300 s tolerance), not an API key. Moves the developer's tier on
    `checkout.session.completed`, `customer.subscription.created/updated/deleted`,
    `invoice.paid` and `invoice.payment_failed`; each event id is applied once.

    Args:
        stripe_signature (str):
        body (BillingWebhookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WebhookReceiptBody]
    """

    kwargs = _get_kwargs(
        body=body,
        stripe_signature=stripe_signature,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: BillingWebhookBody,
    stripe_signature: str,
) -> ErrorBody | WebhookReceiptBody | None:
    """The payment processor's webhook. Authenticated by `Stripe-Signature` (HMAC-SHA256 of
    `t.payload`, 300 s tolerance), not an API key. Moves the developer's tier on
    `checkout.session.completed`, `customer.subscription.created/updated/deleted`,
    `invoice.paid` and `invoice.payment_failed`; each event id is applied once.

    Args:
        stripe_signature (str):
        body (BillingWebhookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WebhookReceiptBody
    """

    return sync_detailed(
        client=client,
        body=body,
        stripe_signature=stripe_signature,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: BillingWebhookBody,
    stripe_signature: str,
) -> Response[ErrorBody | WebhookReceiptBody]:
    """The payment processor's webhook. Authenticated by `Stripe-Signature` (HMAC-SHA256 of
    `t.payload`, 300 s tolerance), not an API key. Moves the developer's tier on
    `checkout.session.completed`, `customer.subscription.created/updated/deleted`,
    `invoice.paid` and `invoice.payment_failed`; each event id is applied once.

    Args:
        stripe_signature (str):
        body (BillingWebhookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WebhookReceiptBody]
    """

    kwargs = _get_kwargs(
        body=body,
        stripe_signature=stripe_signature,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: BillingWebhookBody,
    stripe_signature: str,
) -> ErrorBody | WebhookReceiptBody | None:
    """The payment processor's webhook. Authenticated by `Stripe-Signature` (HMAC-SHA256 of
    `t.payload`, 300 s tolerance), not an API key. Moves the developer's tier on
    `checkout.session.completed`, `customer.subscription.created/updated/deleted`,
    `invoice.paid` and `invoice.payment_failed`; each event id is applied once.

    Args:
        stripe_signature (str):
        body (BillingWebhookBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WebhookReceiptBody
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            stripe_signature=stripe_signature,
        )
    ).parsed
