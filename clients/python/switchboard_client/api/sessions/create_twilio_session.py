from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.twilio_session_body import TwilioSessionBody
from ...models.twilio_session_request import TwilioSessionRequest
from ...types import Response


def _get_kwargs(
    *,
    body: TwilioSessionRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sessions/twilio",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | TwilioSessionBody | None:
    if response.status_code == 200:
        response_200 = TwilioSessionBody.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = ErrorBody.from_dict(response.json())

        return response_408

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = ErrorBody.from_dict(response.json())

        return response_415

    if response.status_code == 429:
        response_429 = ErrorBody.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorBody | TwilioSessionBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: TwilioSessionRequest,
) -> Response[ErrorBody | TwilioSessionBody]:
    """Sets up a phone session. Answers JSON, or the TwiML itself (`text/xml`) when the request's
    Accept header prefers XML, so a voice webhook can pass it straight to Twilio. When the
    developer's concurrent sessions are all in use the call is refused before it connects:
    still 200, `status: "busy"`, and markup that tells the caller the lines are busy
    (`telephony.busy_message`) and hangs up.

    Args:
        body (TwilioSessionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | TwilioSessionBody]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: TwilioSessionRequest,
) -> ErrorBody | TwilioSessionBody | None:
    """Sets up a phone session. Answers JSON, or the TwiML itself (`text/xml`) when the request's
    Accept header prefers XML, so a voice webhook can pass it straight to Twilio. When the
    developer's concurrent sessions are all in use the call is refused before it connects:
    still 200, `status: "busy"`, and markup that tells the caller the lines are busy
    (`telephony.busy_message`) and hangs up.

    Args:
        body (TwilioSessionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | TwilioSessionBody
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: TwilioSessionRequest,
) -> Response[ErrorBody | TwilioSessionBody]:
    """Sets up a phone session. Answers JSON, or the TwiML itself (`text/xml`) when the request's
    Accept header prefers XML, so a voice webhook can pass it straight to Twilio. When the
    developer's concurrent sessions are all in use the call is refused before it connects:
    still 200, `status: "busy"`, and markup that tells the caller the lines are busy
    (`telephony.busy_message`) and hangs up.

    Args:
        body (TwilioSessionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | TwilioSessionBody]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: TwilioSessionRequest,
) -> ErrorBody | TwilioSessionBody | None:
    """Sets up a phone session. Answers JSON, or the TwiML itself (`text/xml`) when the request's
    Accept header prefers XML, so a voice webhook can pass it straight to Twilio. When the
    developer's concurrent sessions are all in use the call is refused before it connects:
    still 200, `status: "busy"`, and markup that tells the caller the lines are busy
    (`telephony.busy_message`) and hangs up.

    Args:
        body (TwilioSessionRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | TwilioSessionBody
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
