from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...models.open_ai_model_body import OpenAiModelBody
from ...types import Response


def _get_kwargs(
    model: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/models/{model}".format(
            model=quote(str(model), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | ErrorBody | OpenAiModelBody | None:
    if response.status_code == 200:
        response_200 = OpenAiModelBody.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = cast(Any, None)
        return response_401

    if response.status_code == 404:
        response_404 = cast(Any, None)
        return response_404

    if response.status_code == 429:
        response_429 = ErrorBody.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Any | ErrorBody | OpenAiModelBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    model: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | ErrorBody | OpenAiModelBody]:
    """One audio model as OpenAI's `GET /v1/models/{model}` answers it (the SDK's
    `models.retrieve()`); an unknown id is 404.

    Args:
        model (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody | OpenAiModelBody]
    """

    kwargs = _get_kwargs(
        model=model,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    model: str,
    *,
    client: AuthenticatedClient,
) -> Any | ErrorBody | OpenAiModelBody | None:
    """One audio model as OpenAI's `GET /v1/models/{model}` answers it (the SDK's
    `models.retrieve()`); an unknown id is 404.

    Args:
        model (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody | OpenAiModelBody
    """

    return sync_detailed(
        model=model,
        client=client,
    ).parsed


async def asyncio_detailed(
    model: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | ErrorBody | OpenAiModelBody]:
    """One audio model as OpenAI's `GET /v1/models/{model}` answers it (the SDK's
    `models.retrieve()`); an unknown id is 404.

    Args:
        model (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody | OpenAiModelBody]
    """

    kwargs = _get_kwargs(
        model=model,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    model: str,
    *,
    client: AuthenticatedClient,
) -> Any | ErrorBody | OpenAiModelBody | None:
    """One audio model as OpenAI's `GET /v1/models/{model}` answers it (the SDK's
    `models.retrieve()`); an unknown id is 404.

    Args:
        model (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody | OpenAiModelBody
    """

    return (
        await asyncio_detailed(
            model=model,
            client=client,
        )
    ).parsed
