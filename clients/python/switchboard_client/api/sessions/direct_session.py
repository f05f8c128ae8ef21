from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    *,
    token: str | Unset = UNSET,
    sample_rate: int | Unset = UNSET,
    encoding: str | Unset = UNSET,
    acks: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["token"] = token

    params["sampleRate"] = sample_rate

    params["encoding"] = encoding

    params["acks"] = acks

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/agents/{id}/session".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | ErrorBody | None:
    if response.status_code == 101:
        response_101 = cast(Any, None)
        return response_101

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401

    if response.status_code == 402:
        response_402 = ErrorBody.from_dict(response.json())

        return response_402

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    token: str | Unset = UNSET,
    sample_rate: int | Unset = UNSET,
    encoding: str | Unset = UNSET,
    acks: str | Unset = UNSET,
) -> Response[Any | ErrorBody]:
    """`GET /v1/agents/{id}/session`: authenticated by `Authorization: Bearer <API key>` or by a
    session token in `?token=`.

     Opens a real-time session with the agent as a WebSocket (101 Switching Protocols). Text frames carry
    JSON control messages and events; binary frames carry audio both ways: PCM16 little-endian mono
    (`encoding=pcm16`) or one 20 ms Opus packet per frame (`encoding=opus`), at `sampleRate`. The
    message and event types are listed in docs/realtime.md.

    Args:
        id (str):
        token (str | Unset):
        sample_rate (int | Unset):
        encoding (str | Unset):
        acks (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
    """

    kwargs = _get_kwargs(
        id=id,
        token=token,
        sample_rate=sample_rate,
        encoding=encoding,
        acks=acks,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    token: str | Unset = UNSET,
    sample_rate: int | Unset = UNSET,
    encoding: str | Unset = UNSET,
    acks: str | Unset = UNSET,
) -> Any | ErrorBody | None:
    """`GET /v1/agents/{id}/session`: authenticated by `Authorization: Bearer <API key>` or by a
    session token in `?token=`.

     Opens a real-time session with the agent as a WebSocket (101 Switching Protocols). Text frames carry
    JSON control messages and events; binary frames carry audio both ways: PCM16 little-endian mono
    (`encoding=pcm16`) or one 20 ms Opus packet per frame (`encoding=opus`), at `sampleRate`. The
    message and event types are listed in docs/realtime.md.

    Args:
        id (str):
        token (str | Unset):
        sample_rate (int | Unset):
        encoding (str | Unset):
        acks (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody
    """

    return sync_detailed(
        id=id,
        client=client,
        token=token,
        sample_rate=sample_rate,
        encoding=encoding,
        acks=acks,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    token: str | Unset = UNSET,
    sample_rate: int | Unset = UNSET,
    encoding: str | Unset = UNSET,
    acks: str | Unset = UNSET,
) -> Response[Any | ErrorBody]:
    """`GET /v1/agents/{id}/session`: authenticated by `Authorization: Bearer <API key>` or by a
    session token in `?token=`.

     Opens a real-time session with the agent as a WebSocket (101 Switching Protocols). Text frames carry
    JSON control messages and events; binary frames carry audio both ways: PCM16 little-endian mono
    (`encoding=pcm16`) or one 20 ms Opus packet per frame (`encoding=opus`), at `sampleRate`. The
    message and event types are listed in docs/realtime.md.

    Args:
        id (str):
        token (str | Unset):
        sample_rate (int | Unset):
        encoding (str | Unset):
        acks (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
    """

    kwargs = _get_kwargs(
        id=id,
        token=token,
        sample_rate=sample_rate,
        encoding=encoding,
        acks=acks,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    token: str | Unset = UNSET,
    sample_rate: int | Unset = UNSET,
    encoding: str | Unset = UNSET,
    acks: str | Unset = UNSET,
) -> Any | ErrorBody | None:
    """`GET /v1/agents/{id}/session`: authenticated by `Authorization: Bearer <API key>` or by a
    session token in `?token=`.

     Opens a real-time session with the agent as a WebSocket (101 Switching Protocols). Text frames carry
    JSON control messages and events; binary frames carry audio both ways: PCM16 little-endian mono
    (`encoding=pcm16`) or one 20 ms Opus packet per frame (`encoding=opus`), at `sampleRate`. The
    message and event types are listed in docs/realtime.md.

    Args:
        id (str):
        token (str | Unset):
        sample_rate (int | Unset):
        encoding (str | Unset):
        acks (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            token=token,
            sample_rate=sample_rate,
            encoding=encoding,
            acks=acks,
        )
    ).parsed
