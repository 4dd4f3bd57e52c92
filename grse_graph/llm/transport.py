"""Endpoint failures of the one client path, as typed one-line errors. The OpenAI client retries
what is transient on the wire (``max_retries`` per role) but not a 200 answer whose body is not a
chat completion: `call_with_reply_retries` asks again for those. A 400 (asking again cannot help)
becomes `ModelRequestRefused`, which callers that can lose one unit of work (a critic call)
catch; nothing from httpx or openai reaches the user as a traceback.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import httpx
import openai

from grse_graph.errors import GrseError, ModelEndpointError, ModelRequestRefused

T = TypeVar("T")

MALFORMED_REPLY_ERRORS: tuple[type[Exception], ...] = (
    json.JSONDecodeError,
    openai.APIResponseValidationError,
)
"""A 200 answer whose body is not a usable chat completion (not retried by the OpenAI client)."""

_ENDPOINT_ERRORS: tuple[type[Exception], ...] = (
    *MALFORMED_REPLY_ERRORS,
    openai.APIError,
    httpx.HTTPError,
)
_REPLY_RETRY_PAUSE_S = 0.2


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _refused(error: BaseException, where: str = "") -> ModelRequestRefused:
    return ModelRequestRefused(f"{where}the model server refused the request: {_first_line(error)}")


def describe(error: BaseException) -> str:
    """What went wrong, in a few words."""
    if isinstance(error, openai.APITimeoutError):
        return "timed out"
    if isinstance(error, openai.APIConnectionError):
        # langchain-openai and openai wrap the transport error; name the one from the wire.
        cause: BaseException | None = error.__cause__
        while isinstance(cause, openai.APIConnectionError) and cause.__cause__ is not None:
            cause = cause.__cause__
        if cause is None or isinstance(cause, openai.APIConnectionError):
            return "connection failed (no answer)"
        return f"connection failed ({type(cause).__name__}: {_first_line(cause)})"
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}: {_first_line(error)}"
    if isinstance(error, json.JSONDecodeError):
        return f"the reply is not valid JSON ({error.msg} at character {error.pos})"
    return f"{type(error).__name__}: {_first_line(error)}"


def endpoint_error(role: str, base_url: str, attempts: int, error: BaseException) -> GrseError:
    """The one-line error for a call that failed after `attempts` HTTP attempts."""
    if isinstance(error, openai.BadRequestError):
        return _refused(error, f"{role} endpoint {base_url}: ")
    return ModelEndpointError(
        f"{role} endpoint {base_url}: {describe(error)} "
        f"(gave up after {attempts} attempt{'s' if attempts != 1 else ''})"
    )


@contextmanager
def refusals_translated() -> Iterator[None]:
    """An `openai.BadRequestError` of any chat model inside becomes `ModelRequestRefused`."""
    try:
        yield
    except openai.BadRequestError as error:
        raise _refused(error) from error


@contextmanager
def endpoint_errors_translated(role: str, base_url: str, max_retries: int | None) -> Iterator[None]:
    """Inside this block every endpoint failure becomes `endpoint_error` (nothing is retried
    here: for streams, whose chunks may already have been used)."""
    try:
        yield
    except _ENDPOINT_ERRORS as error:
        raise endpoint_error(role, base_url, _attempts(max_retries), error) from error


def _attempts(max_retries: int | None) -> int:
    return 1 + max(0, max_retries or 0)


def _pause_or_raise(
    error: Exception, attempt: int, attempts: int, role: str, base_url: str
) -> float:
    """The pause after a malformed reply with attempts left; any other failure is raised."""
    if isinstance(error, MALFORMED_REPLY_ERRORS) and attempt < attempts:
        return _REPLY_RETRY_PAUSE_S * attempt
    raise endpoint_error(role, base_url, attempts, error) from error


def call_with_reply_retries(
    call: Callable[[], T], *, role: str, base_url: str, max_retries: int | None
) -> T:
    """Run one chat request; retry malformed replies, translate every endpoint failure."""
    attempts = _attempts(max_retries)
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except _ENDPOINT_ERRORS as error:
            time.sleep(_pause_or_raise(error, attempt, attempts, role, base_url))
    raise AssertionError("unreachable")  # the last attempt returns or raises


async def acall_with_reply_retries(
    call: Callable[[], Awaitable[T]], *, role: str, base_url: str, max_retries: int | None
) -> T:
    """Async `call_with_reply_retries`."""
    attempts = _attempts(max_retries)
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except _ENDPOINT_ERRORS as error:
            await asyncio.sleep(_pause_or_raise(error, attempt, attempts, role, base_url))
    raise AssertionError("unreachable")  # the last attempt returns or raises
