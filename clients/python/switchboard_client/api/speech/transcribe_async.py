from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.accepted_job_body import AcceptedJobBody
from ...models.error_body import ErrorBody
from ...models.transcribe_request import TranscribeRequest
from ...types import Response


def _get_kwargs(
    *,
    body: TranscribeRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/transcribe/async",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AcceptedJobBody | ErrorBody | None:
    if response.status_code == 202:
        response_202 = AcceptedJobBody.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401

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

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AcceptedJobBody | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: TranscribeRequest,
) -> Response[AcceptedJobBody | ErrorBody]:
    """Accepts a transcription to run in the background; poll `GET /v1/transcribe/{jobId}`.

    Args:
        body (TranscribeRequest): The JSON form of a transcription request. Multipart forms carry
            the same fields as text
            parts, plus the audio as the `file` part.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AcceptedJobBody | ErrorBody]
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
    body: TranscribeRequest,
) -> AcceptedJobBody | ErrorBody | None:
    """Accepts a transcription to run in the background; poll `GET /v1/transcribe/{jobId}`.

    Args:
        body (TranscribeRequest): The JSON form of a transcription request. Multipart forms carry
            the same fields as text
            parts, plus the audio as the `file` part.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AcceptedJobBody | ErrorBody
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: TranscribeRequest,
) -> Response[AcceptedJobBody | ErrorBody]:
    """Accepts a transcription to run in the background; poll `GET /v1/transcribe/{jobId}`.

    Args:
        body (TranscribeRequest): The JSON form of a transcription request. Multipart forms carry
            the same fields as text
            parts, plus the audio as the `file` part.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AcceptedJobBody | ErrorBody]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: TranscribeRequest,
) -> AcceptedJobBody | ErrorBody | None:
    """Accepts a transcription to run in the background; poll `GET /v1/transcribe/{jobId}`.

    Args:
        body (TranscribeRequest): The JSON form of a transcription request. Multipart forms carry
            the same fields as text
            parts, plus the audio as the `file` part.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AcceptedJobBody | ErrorBody
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
