from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_body import ErrorBody
from ...types import Response


def _get_kwargs(
    task_id: str,
    *,
    body: str,
    x_twilio_signature: str,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    headers["X-Twilio-Signature"] = x_twilio_signature

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sessions/twilio/task/{task_id}/amd".format(
            task_id=quote(str(task_id), safe=""),
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

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400

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
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Response[Any | ErrorBody]:
    """Twilio's answering-machine verdict on an outbound call placed with `machineDetection`
    `hangup` or `message` (asynchronous detection: the call went on meanwhile). A person or
    no verdict (`human`, `unknown`) keeps talking to the agent; a machine is hung up on or
    left the voicemail message after the beep; a fax is hung up on. The first verdict
    stands: a repeated callback changes nothing. The verdict shows on the task
    (`answeredBy`, `machineAction`) and, once the call connected, on its session as a
    `machine_detection` call event.

    Args:
        task_id (str):
        x_twilio_signature (str):
        body (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
    """

    kwargs = _get_kwargs(
        task_id=task_id,
        body=body,
        x_twilio_signature=x_twilio_signature,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Any | ErrorBody | None:
    """Twilio's answering-machine verdict on an outbound call placed with `machineDetection`
    `hangup` or `message` (asynchronous detection: the call went on meanwhile). A person or
    no verdict (`human`, `unknown`) keeps talking to the agent; a machine is hung up on or
    left the voicemail message after the beep; a fax is hung up on. The first verdict
    stands: a repeated callback changes nothing. The verdict shows on the task
    (`answeredBy`, `machineAction`) and, once the call connected, on its session as a
    `machine_detection` call event.

    Args:
        task_id (str):
        x_twilio_signature (str):
        body (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | ErrorBody
    """

    return sync_detailed(
        task_id=task_id,
        client=client,
        body=body,
        x_twilio_signature=x_twilio_signature,
    ).parsed


async def asyncio_detailed(
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Response[Any | ErrorBody]:
    """Twilio's answering-machine verdict on an outbound call placed with `machineDetection`
    `hangup` or `message` (asynchronous detection: the call went on meanwhile). A person or
    no verdict (`human`, `unknown`) keeps talking to the agent; a machine is hung up on or
    left the voicemail message after the beep; a fax is hung up on. The first verdict
    stands: a repeated callback changes nothing. The verdict shows on the task
    (`answeredBy`, `machineAction`) and, once the call connected, on its session as a
    `machine_detection` call event.

    Args:
        task_id (str):
        x_twilio_signature (str):
        body (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | ErrorBody]
    """

    kwargs = _get_kwargs(
        task_id=task_id,
        body=body,
        x_twilio_signature=x_twilio_signature,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    task_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: str,
    x_twilio_signature: str,
) -> Any | ErrorBody | None:
    """Twilio's answering-machine verdict on an outbound call placed with `machineDetection`
    `hangup` or `message` (asynchronous detection: the call went on meanwhile). A person or
    no verdict (`human`, `unknown`) keeps talking to the agent; a machine is hung up on or
    left the voicemail message after the beep; a fax is hung up on. The first verdict
    stands: a repeated callback changes nothing. The verdict shows on the task
    (`answeredBy`, `machineAction`) and, once the call connected, on its session as a
    `machine_detection` call event.

    Args:
        task_id (str):
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
            task_id=task_id,
            client=client,
            body=body,
            x_twilio_signature=x_twilio_signature,
        )
    ).parsed
