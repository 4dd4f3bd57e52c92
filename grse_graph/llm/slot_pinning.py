"""Pin each agent's prompt prefix to one llama.cpp server slot (``id_slot``: the slot that last
served the same tools and first message, else the least recently used) and, with ``repeatable``,
prime that slot before each chat request and send one at a time, which makes greedy answers
independent of history and concurrency (docs/ENGINE.md). Priming requests are engine upkeep,
below the clients' accounting; all are ordinary chat requests, so any llama.cpp server works.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

_GATE_POLL_S = 0.01
_CHAT_PATH_SUFFIX = "/chat/completions"
PRIMING_TEXT = "\u2042"
"""The user text of a priming request: no real message starts with it."""


def _chat_payload(body: bytes) -> dict[str, Any] | None:
    """The JSON of a chat request with messages (None for any other body)."""
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    messages = payload.get("messages") if isinstance(payload, dict) else None
    return payload if isinstance(messages, list) and messages else None


def prefix_key(payload: dict[str, Any]) -> str:
    """The key of a chat request's fixed prefix: its tools and first message."""
    fixed = json.dumps([payload.get("tools"), payload["messages"][0]], sort_keys=True, default=str)
    return hashlib.sha256(fixed.encode()).hexdigest()


def priming_body(payload: dict[str, Any], slot: int, *, from_scratch: bool) -> dict[str, Any]:
    """The priming request of a chat request's prefix on ``slot``: its model, tools and first
    message, then `PRIMING_TEXT` as the user's turn, greedy, one token; computed without the
    slot's cache when ``from_scratch``."""
    tools = {"tools": payload["tools"]} if payload.get("tools") else {}
    return {
        "model": payload.get("model"),
        "messages": [payload["messages"][0], {"role": "user", "content": PRIMING_TEXT}],
        "max_tokens": 1,
        "temperature": 0.0,
        "id_slot": slot,
        "cache_prompt": not from_scratch,
        **tools,
    }


class SlotAffinity:
    """Which slot serves a prefix key: the one that served it last, else the least recently
    used (whose keys move on; `reloads` counts keys that come back and compute their prefix
    again: more than a few mean more prefixes than ``[engine] n_parallel``). Thread-safe."""

    def __init__(self, slots: int) -> None:
        self._slot_of: dict[str, int] = {}
        self._evicted: set[str] = set()
        self._last_use = [0] * slots
        self._clock = 0
        self._lock = threading.Lock()
        self.reloads = 0

    def slot_for(self, key: str) -> int:
        with self._lock:
            self._clock += 1
            slot = self._slot_of.get(key)
            if slot is None:
                slot = min(range(len(self._last_use)), key=self._last_use.__getitem__)
                if key in self._evicted:
                    self.reloads += 1
                    self._evicted.discard(key)
                self._evicted.update(k for k, s in self._slot_of.items() if s == slot)
                self._slot_of = {k: s for k, s in self._slot_of.items() if s != slot}
                self._slot_of[key] = slot
            self._last_use[slot] = self._clock
            return slot


@dataclass(frozen=True)
class PinnedRequest:
    """A chat request with its slot named, and what to send before it on that slot."""

    request: httpx.Request
    slot: int
    preparation: tuple[httpx.Request, ...]
    samples: int


class SlotPinning:
    """One llama.cpp server's slots: the prefix affinity, the gate and each slot's primed key."""

    def __init__(self, base_url: str, slots: int, *, repeatable: bool) -> None:
        self.url = httpx.URL(base_url)
        self.affinity = SlotAffinity(slots)
        self.repeatable = repeatable
        self.gate = threading.BoundedSemaphore(1)
        self._primed: list[str | None] = [None] * slots

    def pins(self, url: httpx.URL) -> bool:
        """True when ``url`` is a chat completion on this server."""
        return (
            (url.host, url.port) == (self.url.host, self.url.port)
            and url.path.startswith(self.url.path)
            and url.path.endswith(_CHAT_PATH_SUFFIX)
        )

    def pin(self, request: httpx.Request, body: bytes) -> tuple[PinnedRequest | None, _ReleaseOnce]:
        """Under the gate (taken when ``repeatable``): ``request`` with ``id_slot`` set and its
        priming, or None for a request that is not a chat (the gate then released at once); and
        the gate's release."""
        release = _ReleaseOnce(self.gate if self.repeatable else None)
        payload = _chat_payload(body)
        if payload is None:
            release()
            return None, release
        key = prefix_key(payload)
        slot = self.affinity.slot_for(key)
        # The priming request carries the request's headers (a router's affinity key).
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        pinned = httpx.Request(
            request.method,
            request.url,
            headers=headers,
            content=json.dumps({**payload, "id_slot": slot}).encode(),
            extensions=request.extensions,
        )
        preparation: tuple[httpx.Request, ...] = ()
        if self.repeatable:
            fresh = self._primed[slot] != key
            priming = json.dumps(priming_body(payload, slot, from_scratch=fresh)).encode()
            preparation = (httpx.Request("POST", request.url, headers=headers, content=priming),)
            self._primed[slot] = key
        return PinnedRequest(pinned, slot, preparation, int(payload.get("n") or 1)), release

    @contextmanager
    def exchange(self, pinned: PinnedRequest, release: _ReleaseOnce) -> Iterator[None]:
        """Around the requests of ``pinned``: a failure forgets its slot's priming and opens the
        gate; an answer with ``n`` > 1 leaves every other slot unprepared (see the module)."""
        try:
            yield
        except BaseException:
            self._primed[pinned.slot] = None
            release()
            raise
        if pinned.samples > 1:
            self._primed = [k if i == pinned.slot else None for i, k in enumerate(self._primed)]


def _check_prepared(response: httpx.Response, request: httpx.Request) -> None:
    if response.status_code >= 400:
        raise httpx.HTTPStatusError(
            f"priming slot for a repeatable prompt: {request.url.path} answered "
            f"{response.status_code}",
            request=request,
            response=response,
        )


class _ReleaseOnce:
    def __init__(self, gate: threading.BoundedSemaphore | None) -> None:
        self._gate = gate
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            if self._gate is not None:
                self._gate.release()
                self._gate = None


class _GatedStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body, sync or async like the inner one, that opens the gate once done."""

    def __init__(self, inner: Any, release: _ReleaseOnce) -> None:
        self._inner = inner
        self._release = release

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._inner
        finally:
            self._release()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._release()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        finally:
            self._release()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._release()


def _gated(response: httpx.Response, release: _ReleaseOnce) -> httpx.Response:
    """``response`` whose body opens the gate once read or closed (at once if already read)."""
    if isinstance(response.stream, httpx.ByteStream):
        release()
    else:
        response.stream = _GatedStream(response.stream, release)
    return response


def _pinning_of(pinnings: Sequence[SlotPinning], url: httpx.URL) -> SlotPinning | None:
    return next((pinning for pinning in pinnings if pinning.pins(url)), None)


class SlotPinningTransport(httpx.BaseTransport):
    """Pins the chat completions of ``pinnings``' servers; other requests go to ``inner`` as is."""

    def __init__(self, pinnings: Sequence[SlotPinning], inner: httpx.BaseTransport) -> None:
        self._pinnings = tuple(pinnings)
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        pinning = _pinning_of(self._pinnings, request.url)
        if pinning is None:
            return self._inner.handle_request(request)
        body = request.read()
        if pinning.repeatable:
            pinning.gate.acquire()
        pinned, release = pinning.pin(request, body)
        if pinned is None:
            return self._inner.handle_request(request)
        with pinning.exchange(pinned, release):
            for step in pinned.preparation:
                primed = self._inner.handle_request(step)
                primed.read()  # to its end, which closes it
                _check_prepared(primed, step)
            response = self._inner.handle_request(pinned.request)
        return _gated(response, release)

    def close(self) -> None:
        self._inner.close()


class AsyncSlotPinningTransport(httpx.AsyncBaseTransport):
    """Async `SlotPinningTransport`: one gate per server covers sync, async and every loop."""

    def __init__(self, pinnings: Sequence[SlotPinning], inner: httpx.AsyncBaseTransport) -> None:
        self._pinnings = tuple(pinnings)
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        pinning = _pinning_of(self._pinnings, request.url)
        if pinning is None:
            return await self._inner.handle_async_request(request)
        body = await request.aread()
        # The gate is taken without blocking the event loop.
        while pinning.repeatable and not pinning.gate.acquire(blocking=False):
            await asyncio.sleep(_GATE_POLL_S)
        pinned, release = pinning.pin(request, body)
        if pinned is None:
            return await self._inner.handle_async_request(request)
        with pinning.exchange(pinned, release):
            for step in pinned.preparation:
                primed = await self._inner.handle_async_request(step)
                await primed.aread()
                _check_prepared(primed, step)
            response = await self._inner.handle_async_request(pinned.request)
        return _gated(response, release)

    async def aclose(self) -> None:
        await self._inner.aclose()
