from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.transcription_form import TranscriptionForm
from ...types import Response


def _get_kwargs(
    *,
    body: TranscriptionForm,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/audio/transcriptions",
    }

    _kwargs["files"] = body.to_multipart()

    headers["Content-Type"] = "multipart/form-data; boundary=+++"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | None:
    if response.status_code == 200:
        return None

    if response.status_code == 400:
        return None

    if response.status_code == 401:
        return None

    if response.status_code == 408:
        return None

    if response.status_code == 413:
        return None

    if response.status_code == 415:
        return None

    if response.status_code == 429:
        return None

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: TranscriptionForm,
) -> Response[Any]:
    """Transcription as OpenAI's `POST /v1/audio/transcriptions` (multipart, `file` at most
    25 MB). `response_format` json (default), text, srt, verbose_json or vtt;
    `timestamp_granularities[]` word and/or segment with verbose_json; `stream=true` with a
    `gpt-4o-transcribe` family model answers server-sent events.

    Args:
        body (TranscriptionForm): The form of `POST /v1/audio/transcriptions`, as the document
            shows it (OpenAI's fields).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: TranscriptionForm,
) -> Response[Any]:
    """Transcription as OpenAI's `POST /v1/audio/transcriptions` (multipart, `file` at most
    25 MB). `response_format` json (default), text, srt, verbose_json or vtt;
    `timestamp_granularities[]` word and/or segment with verbose_json; `stream=true` with a
    `gpt-4o-transcribe` family model answers server-sent events.

    Args:
        body (TranscriptionForm): The form of `POST /v1/audio/transcriptions`, as the document
            shows it (OpenAI's fields).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)
