"""Route each chat request to the engine slot that already holds its prompt prefix.

llama-cpp-python's server keeps one KV cache and reuses a prompt's prefix only from the request
just before it. A team alternates agents whose fixed prefixes (role, skills, tools) differ, so
most requests start cold: in a 12-question audit of the planted demo library 65 of 153 requests
reused at most 7 tokens and evaluated 52k prompt tokens. `EngineSlots` therefore runs one
llama-cpp-python process per slot, and these transports send every chat completion to the slot
that last served the same prefix key (the tools and the first message), so each agent's prefix
is computed once per slot instead of once per question. A new key takes the least recently used
slot.

One gate per slot group lets one chat request run at a time across its slots: the processes
share the same cores (each uses all of them), and one llama-cpp-python process serialised its
requests anyway. The gate is held until the response body is read or closed (at once for a body
that is already in memory).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence

import httpx

_GATE_POLL_S = 0.01
_CHAT_PATH_SUFFIX = "/chat/completions"


def prefix_key(body: bytes) -> str | None:
    """The key of a chat request's fixed prefix: its tools and first message (None when the
    body is not a chat request with messages)."""
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict):
        return None
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        return None
    fixed = json.dumps([payload.get("tools"), messages[0]], sort_keys=True, default=str)
    return hashlib.sha256(fixed.encode()).hexdigest()


class SlotAffinity:
    """Which slot serves a prefix key: the slot that served it last, else the least recently
    used slot (whose earlier keys then move on). Thread-safe."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a slot group needs at least one slot")
        self._slot_of: dict[str, int] = {}
        self._last_use = [0] * slots
        self._clock = 0
        self._lock = threading.Lock()

    def slot_for(self, key: str | None) -> int:
        """The slot for ``key`` (a request without a key takes the least recently used one)."""
        with self._lock:
            self._clock += 1
            slot = self._slot_of.get(key) if key is not None else None
            if slot is None:
                slot = min(range(len(self._last_use)), key=self._last_use.__getitem__)
                if key is not None:
                    self._slot_of = {k: s for k, s in self._slot_of.items() if s != slot}
                    self._slot_of[key] = slot
            self._last_use[slot] = self._clock
            return slot


class SlotGroup:
    """The slots of one engine: their base URLs (the first is the one roles are given), the
    prefix affinity and the gate."""

    def __init__(self, base_urls: Sequence[str]) -> None:
        if not base_urls:
            raise ValueError("a slot group needs at least one base URL")
        self.urls = tuple(httpx.URL(url) for url in base_urls)
        self.affinity = SlotAffinity(len(self.urls))
        self.gate = threading.BoundedSemaphore(1)

    def routes(self, url: httpx.URL) -> bool:
        """True when ``url`` is a chat completion on this group's first slot."""
        first = self.urls[0]
        return (
            url.host == first.host
            and url.port == first.port
            and url.path.startswith(first.path)
            and url.path.endswith(_CHAT_PATH_SUFFIX)
        )

    def move(self, request: httpx.Request, body: bytes) -> None:
        """Send ``request`` to the slot that holds this body's prefix."""
        chosen = self.urls[self.affinity.slot_for(prefix_key(body))]
        request.url = request.url.copy_with(host=chosen.host, port=chosen.port)
        request.headers["Host"] = request.url.netloc.decode("ascii")


class SlotRouter:
    """The slot groups of every embedded engine, keyed by the first slot's base URL."""

    def __init__(self, slots: Mapping[str, Sequence[str]]) -> None:
        self.groups = tuple(SlotGroup(urls) for urls in slots.values() if len(urls) > 1)

    def group_for(self, url: httpx.URL) -> SlotGroup | None:
        """The group whose first slot ``url`` addresses with a chat completion, if any."""
        return next((group for group in self.groups if group.routes(url)), None)


class _ReleaseOnce:
    def __init__(self, gate: threading.BoundedSemaphore) -> None:
        self._gate = gate
        self._released = False
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            if not self._released:
                self._released = True
                self._gate.release()


class _GatedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, release: _ReleaseOnce) -> None:
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


class _AsyncGatedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, release: _ReleaseOnce) -> None:
        self._inner = inner
        self._release = release

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


class SlotRoutingTransport(httpx.BaseTransport):
    """A sync transport that routes chat completions of slot groups (see the module); every
    other request goes to ``inner`` unchanged."""

    def __init__(self, router: SlotRouter, inner: httpx.BaseTransport) -> None:
        self._router = router
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        group = self._router.group_for(request.url)
        if group is None:
            return self._inner.handle_request(request)
        group.move(request, request.read())
        group.gate.acquire()
        release = _ReleaseOnce(group.gate)
        try:
            response = self._inner.handle_request(request)
        except BaseException:
            release()
            raise
        if isinstance(response.stream, httpx.ByteStream):
            release()  # a body already in memory: nothing of the engine's left to wait for
        else:
            assert isinstance(response.stream, httpx.SyncByteStream)
            response.stream = _GatedStream(response.stream, release)
        return response

    def close(self) -> None:
        self._inner.close()


class AsyncSlotRoutingTransport(httpx.AsyncBaseTransport):
    """The async twin of `SlotRoutingTransport` (it shares the router, so one gate covers
    sync and async callers and every event loop)."""

    def __init__(self, router: SlotRouter, inner: httpx.AsyncBaseTransport) -> None:
        self._router = router
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        group = self._router.group_for(request.url)
        if group is None:
            return await self._inner.handle_async_request(request)
        group.move(request, await request.aread())
        while not group.gate.acquire(blocking=False):
            await asyncio.sleep(_GATE_POLL_S)
        release = _ReleaseOnce(group.gate)
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            release()
            raise
        if isinstance(response.stream, httpx.ByteStream):
            release()
        else:
            assert isinstance(response.stream, httpx.AsyncByteStream)
            response.stream = _AsyncGatedStream(response.stream, release)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
