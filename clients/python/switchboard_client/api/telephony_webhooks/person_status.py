from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...types import Response


def _get_kwargs(
    session_id: str,
    *,
    body: str,
    x_twilio_signature: str,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    headers["X-Twilio-Signature"] = x_twilio_signature

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sessions/twilio/transfers/{session_id}/person".format(
            session_id=quote(str(session_id), safe=""),
        ),
    }

    _kwargs["data"] = body.to_dict()
    headers["Content-Type"] = "application/x-www-form-urlencoded"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | ErrorBody | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = ErrorBody.from_dict(response.json())

        return response_408

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())

        return response_413

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    session_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Response[Any | ErrorBody]:
    """The status callback of a warm transfer's call to the person. Called by Twilio, not API
    consumers: no API key, a valid `X-Twilio-Signature`.

    Args:
        session_id (str):
        x_twilio_signature (str):
        body (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
    """

    kwargs = _get_kwargs(
        session_id=session_id,
        body=body,
        x_twilio_signature=x_twilio_signature,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    session_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Any | ErrorBody | None:
    """The status callback of a warm transfer's call to the person. Called by Twilio, not API
    consumers: no API key, a valid `X-Twilio-Signature`.

    Args:
        session_id (str):
        x_twilio_signature (str):
        body (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody
    """

    return sync_detailed(
        session_id=session_id,
        client=client,
        body=body,
        x_twilio_signature=x_twilio_signature,
    ).parsed


async def asyncio_detailed(
    session_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Response[Any | ErrorBody]:
    """The status callback of a warm transfer's call to the person. Called by Twilio, not API
    consumers: no API key, a valid `X-Twilio-Signature`.

    Args:
        session_id (str):
        x_twilio_signature (str):
        body (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
    """

    kwargs = _get_kwargs(
        session_id=session_id,
        body=body,
        x_twilio_signature=x_twilio_signature,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    session_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Any | ErrorBody | None:
    """The status callback of a warm transfer's call to the person. Called by Twilio, not API
    consumers: no API key, a valid `X-Twilio-Signature`.

    Args:
        session_id (str):
        x_twilio_signature (str):
        body (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody
    """

    return (
        await asyncio_detailed(
            session_id=session_id,
            client=client,
            body=body,
            x_twilio_signature=x_twilio_signature,
        )
    ).parsed
