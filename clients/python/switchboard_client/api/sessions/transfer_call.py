from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.transfer_body import TransferBody
from ...models.transfer_request import TransferRequest
from ...types import Response


def _get_kwargs(
    call_sid: str,
    *,
    body: TransferRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sessions/twilio/{call_sid}/transfer".format(
            call_sid=quote(str(call_sid), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorBody | TransferBody | None:
    if response.status_code == 200:
        response_200 = TransferBody.from_dict(response.json())

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

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = ErrorBody.from_dict(response.json())

        return response_415

    if response.status_code == 429:
        response_429 = ErrorBody.from_dict(response.json())

        return response_429

    if response.status_code == 502:
        response_502 = ErrorBody.from_dict(response.json())

        return response_502

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorBody | TransferBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    call_sid: str,
    *,
    client: AuthenticatedClient,
    body: TransferRequest,
) -> Response[ErrorBody | TransferBody]:
    """Hands one of the developer's live phone calls to a person. The session ends as
    `transferred`, and its record gets a `transfer` call event
    `{name, number, mode, by: "api", outcome}` whose outcome becomes Twilio's dial status
    (`completed`, `busy`, `no-answer`, `failed`) or, warm, `bridged`. A person who does not
    answer hands the caller back to the agent in a new session of the same call.

    Args:
        call_sid (str):
        body (TransferRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | TransferBody]
    """

    kwargs = _get_kwargs(
        call_sid=call_sid,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    call_sid: str,
    *,
    client: AuthenticatedClient,
    body: TransferRequest,
) -> ErrorBody | TransferBody | None:
    """Hands one of the developer's live phone calls to a person. The session ends as
    `transferred`, and its record gets a `transfer` call event
    `{name, number, mode, by: "api", outcome}` whose outcome becomes Twilio's dial status
    (`completed`, `busy`, `no-answer`, `failed`) or, warm, `bridged`. A person who does not
    answer hands the caller back to the agent in a new session of the same call.

    Args:
        call_sid (str):
        body (TransferRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | TransferBody
    """

    return sync_detailed(
        call_sid=call_sid,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    call_sid: str,
    *,
    client: AuthenticatedClient,
    body: TransferRequest,
) -> Response[ErrorBody | TransferBody]:
    """Hands one of the developer's live phone calls to a person. The session ends as
    `transferred`, and its record gets a `transfer` call event
    `{name, number, mode, by: "api", outcome}` whose outcome becomes Twilio's dial status
    (`completed`, `busy`, `no-answer`, `failed`) or, warm, `bridged`. A person who does not
    answer hands the caller back to the agent in a new session of the same call.

    Args:
        call_sid (str):
        body (TransferRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | TransferBody]
    """

    kwargs = _get_kwargs(
        call_sid=call_sid,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    call_sid: str,
    *,
    client: AuthenticatedClient,
    body: TransferRequest,
) -> ErrorBody | TransferBody | None:
    """Hands one of the developer's live phone calls to a person. The session ends as
    `transferred`, and its record gets a `transfer` call event
    `{name, number, mode, by: "api", outcome}` whose outcome becomes Twilio's dial status
    (`completed`, `busy`, `no-answer`, `failed`) or, warm, `bridged`. A person who does not
    answer hands the caller back to the agent in a new session of the same call.

    Args:
        call_sid (str):
        body (TransferRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | TransferBody
    """

    return (
        await asyncio_detailed(
            call_sid=call_sid,
            client=client,
            body=body,
        )
    ).parsed
