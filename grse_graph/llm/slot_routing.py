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

Repeatable prompts (`SlotRouter(..., repeatable=True)`): greedy output on llama.cpp depends
slightly on which part of a prompt came from the cache, since the rest is computed in other
batches, and that part is the prompt's longest common prefix with whatever the slot served
before. So, before each chat request, and under the same gate, its slot is brought to a state
that depends on the request's prefix key alone: a slot that last served another key is cleared
(a one-token completion whose prompt shares no token with a chat prompt), and every request is
preceded by its key's priming request (`priming_body`: the tools and first message, then a user
turn that no real message starts with, one token). The request then reuses exactly the part it
shares with that priming prompt, computed the same way every time, and computes the rest: the
same request answers the same way whatever the engine served before it, in any order. The
priming requests are engine upkeep and go below the clients' accounting. (Priming the first two
messages as well, to keep reusing a repeated question, measured slower on the demo: 998 s
against 946 s.)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import httpx

_GATE_POLL_S = 0.01
_CHAT_PATH_SUFFIX = "/chat/completions"
_JSON_HEADERS = {"Content-Type": "application/json"}
PRIMING_TEXT = "\u2042"
"""The user text of a priming request: no real message starts with it."""
CLEARING_COMPLETION: dict[str, object] = {"prompt": "\n", "max_tokens": 1, "temperature": 0.0}
"""The completion that replaces a llama-cpp-python process's cached prompt: a newline shares
no first token with a chat prompt (which starts with the template's role marker)."""


def _chat_payload(body: bytes) -> dict[str, Any] | None:
    """The JSON of a chat request with messages (None for any other body)."""
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict):
        return None
    messages = payload.get("messages")
    return payload if isinstance(messages, list) and messages else None


def prefix_key(body: bytes) -> str | None:
    """The key of a chat request's fixed prefix: its tools and first message (None when the
    body is not a chat request with messages)."""
    payload = _chat_payload(body)
    if payload is None:
        return None
    fixed = json.dumps([payload.get("tools"), payload["messages"][0]], sort_keys=True, default=str)
    return hashlib.sha256(fixed.encode()).hexdigest()


def priming_body(body: bytes) -> bytes | None:
    """The priming request of a chat request's prefix key: its model, tools and first message,
    then `PRIMING_TEXT` as the user's turn, greedy, one token (None when the body is not a chat
    request with messages)."""
    payload = _chat_payload(body)
    if payload is None:
        return None
    priming: dict[str, Any] = {
        "model": payload.get("model"),
        "messages": [payload["messages"][0], {"role": "user", "content": PRIMING_TEXT}],
        "max_tokens": 1,
        "temperature": 0.0,
    }
    if payload.get("tools"):
        priming["tools"] = payload["tools"]
    return json.dumps(priming).encode()


class SlotAffinity:
    """Which slot serves a prefix key: the slot that served it last, else the least recently
    used slot (whose earlier keys then move on). Thread-safe.

    `reloads` counts requests whose key had a slot and lost it to another key: each computes
    its prefix again. More than a few mean the workload cycles through more prefixes than there
    are slots (least recently used is then always the next one needed)."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a slot group needs at least one slot")
        self._slot_of: dict[str, int] = {}
        self._evicted: set[str] = set()
        self._last_use = [0] * slots
        self._clock = 0
        self._lock = threading.Lock()
        self.reloads = 0

    def slot_for(self, key: str | None) -> int:
        """The slot for ``key`` (a request without a key takes the least recently used one)."""
        with self._lock:
            self._clock += 1
            slot = self._slot_of.get(key) if key is not None else None
            if slot is None:
                slot = min(range(len(self._last_use)), key=self._last_use.__getitem__)
                if key is not None:
                    if key in self._evicted:
                        self.reloads += 1
                        self._evicted.discard(key)
                    self._evicted.update(k for k, s in self._slot_of.items() if s == slot)
                    self._slot_of = {k: s for k, s in self._slot_of.items() if s != slot}
                    self._slot_of[key] = slot
            self._last_use[slot] = self._clock
            return slot

    def forget(self) -> None:
        """Forget every key's slot and every slot's use: the next keys are placed as on a
        freshly started group (after the slots' caches were cleared)."""
        with self._lock:
            self._slot_of = {}
            self._evicted = set()
            self._last_use = [0] * len(self._last_use)
            self._clock = 0


class SlotGroup:
    """The slots of one engine: their base URLs (the first is the one roles are given), the
    prefix affinity, the gate and, with `repeatable`, the key each slot was last prepared
    for."""

    def __init__(self, base_urls: Sequence[str], *, repeatable: bool = False) -> None:
        if not base_urls:
            raise ValueError("a slot group needs at least one base URL")
        self.urls = tuple(httpx.URL(url) for url in base_urls)
        self.affinity = SlotAffinity(len(self.urls))
        self.gate = threading.BoundedSemaphore(1)
        self.repeatable = repeatable
        # Per slot: the prefix key it was last primed for (None: unknown or cleared).
        self._prepared: list[str | None] = [None] * len(self.urls)

    def forget(self) -> None:
        """Forget the placement and every slot's prepared key (after the slots' caches were
        cleared): the next requests are placed and prepared as on a fresh group."""
        self.affinity.forget()
        self._prepared = [None] * len(self.urls)

    def routes(self, url: httpx.URL) -> bool:
        """True when ``url`` is a chat completion on this group's first slot."""
        first = self.urls[0]
        return (
            url.host == first.host
            and url.port == first.port
            and url.path.startswith(first.path)
            and url.path.endswith(_CHAT_PATH_SUFFIX)
        )

    async def acquire(self) -> None:
        """Take the gate without blocking the event loop."""
        while not self.gate.acquire(blocking=False):
            await asyncio.sleep(_GATE_POLL_S)

    def move(self, request: httpx.Request, body: bytes) -> None:
        """Send ``request`` to the slot that holds this body's prefix."""
        chosen = self.urls[self.affinity.slot_for(prefix_key(body))]
        request.url = request.url.copy_with(host=chosen.host, port=chosen.port)
        request.headers["Host"] = request.url.netloc.decode("ascii")

    def preparation(self, request: httpx.Request, body: bytes) -> tuple[httpx.Request, ...]:
        """What to send to the slot of a moved ``request`` before it, to be called with the
        gate held (nothing unless `repeatable`): see the module docstring."""
        key = prefix_key(body)
        priming = priming_body(body) if self.repeatable else None
        if key is None or priming is None:
            return ()
        slot = self._slot_of(request)
        steps: list[httpx.Request] = []
        if self._prepared[slot] != key:
            base = str(request.url)[: -len(_CHAT_PATH_SUFFIX)]
            steps.append(_post(f"{base}/completions", json.dumps(CLEARING_COMPLETION).encode()))
        steps.append(_post(request.url, priming))
        self._prepared[slot] = key
        return tuple(steps)

    def unprepare(self, request: httpx.Request) -> None:
        """Forget what the slot of ``request`` was prepared for (its preparation failed)."""
        self._prepared[self._slot_of(request)] = None

    def _slot_of(self, request: httpx.Request) -> int:
        where = (request.url.host, request.url.port)
        return next(i for i, url in enumerate(self.urls) if (url.host, url.port) == where)


class SlotRouter:
    """The slot groups of every embedded engine, keyed by the first slot's base URL."""

    def __init__(self, slots: Mapping[str, Sequence[str]], *, repeatable: bool = False) -> None:
        self.groups = tuple(
            SlotGroup(urls, repeatable=repeatable) for urls in slots.values() if len(urls) > 1
        )

    def group_for(self, url: httpx.URL) -> SlotGroup | None:
        """The group whose first slot ``url`` addresses with a chat completion, if any."""
        return next((group for group in self.groups if group.routes(url)), None)

    def prefix_reloads(self) -> int:
        """Requests, over every group, whose prefix lost its slot to another prefix since it
        was last served (see `SlotAffinity`)."""
        return sum(group.affinity.reloads for group in self.groups)

    def group_at(self, base_url: str) -> SlotGroup | None:
        """The group whose first slot has this base URL, if any (an engine with one slot has
        no group)."""
        first = httpx.URL(base_url)
        return next((group for group in self.groups if group.urls[0] == first), None)


def _post(url: httpx.URL | str, body: bytes) -> httpx.Request:
    return httpx.Request("POST", url, content=body, headers=_JSON_HEADERS)


def _prepared_or_error(response: httpx.Response, request: httpx.Request) -> None:
    if response.status_code >= 400:
        raise httpx.HTTPStatusError(
            f"preparing slot {request.url.netloc.decode('ascii')} for a repeatable prompt: "
            f"{request.url.path} answered {response.status_code}",
            request=request,
            response=response,
        )


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
        body = request.read()
        group.move(request, body)
        group.gate.acquire()
        release = _ReleaseOnce(group.gate)
        try:
            for step in group.preparation(request, body):
                try:
                    prepared = self._inner.handle_request(step)
                    prepared.read()
                    prepared.close()
                    _prepared_or_error(prepared, step)
                except BaseException:
                    group.unprepare(request)
                    raise
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
        body = await request.aread()
        group.move(request, body)
        await group.acquire()
        release = _ReleaseOnce(group.gate)
        try:
            for step in group.preparation(request, body):
                try:
                    prepared = await self._inner.handle_async_request(step)
                    await prepared.aread()
                    await prepared.aclose()
                    _prepared_or_error(prepared, step)
                except BaseException:
                    group.unprepare(request)
                    raise
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
