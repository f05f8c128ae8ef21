from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.hang_up_body import HangUpBody
from ...types import Response


def _get_kwargs(
    call_sid: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sessions/twilio/{call_sid}/hangup".format(
            call_sid=quote(str(call_sid), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | HangUpBody | None:
    if response.status_code == 200:
        response_200 = HangUpBody.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())

        return response_409

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
) -> Response[ErrorBody | HangUpBody]:
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
) -> Response[ErrorBody | HangUpBody]:
    """Hangs up one of the developer's live phone calls: Twilio ends the call (`Status=completed`),
    its media stream stops and the session ends as `hangup`, with a `hangup_requested` call
    event on its record.

    Args:
        call_sid (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | HangUpBody]
    """

    kwargs = _get_kwargs(
        call_sid=call_sid,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    call_sid: str,
    *,
    client: AuthenticatedClient,
) -> ErrorBody | HangUpBody | None:
    """Hangs up one of the developer's live phone calls: Twilio ends the call (`Status=completed`),
    its media stream stops and the session ends as `hangup`, with a `hangup_requested` call
    event on its record.

    Args:
        call_sid (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | HangUpBody
    """

    return sync_detailed(
        call_sid=call_sid,
        client=client,
    ).parsed


async def asyncio_detailed(
    call_sid: str,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorBody | HangUpBody]:
    """Hangs up one of the developer's live phone calls: Twilio ends the call (`Status=completed`),
    its media stream stops and the session ends as `hangup`, with a `hangup_requested` call
    event on its record.

    Args:
        call_sid (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | HangUpBody]
    """

    kwargs = _get_kwargs(
        call_sid=call_sid,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    call_sid: str,
    *,
    client: AuthenticatedClient,
) -> ErrorBody | HangUpBody | None:
    """Hangs up one of the developer's live phone calls: Twilio ends the call (`Status=completed`),
    its media stream stops and the session ends as `hangup`, with a `hangup_requested` call
    event on its record.

    Args:
        call_sid (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | HangUpBody
    """

    return (
        await asyncio_detailed(
            call_sid=call_sid,
            client=client,
        )
    ).parsed
