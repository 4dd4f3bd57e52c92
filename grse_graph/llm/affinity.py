"""The affinity key: one key on every request of one unit of work, for routers that hash it.

GRSE is made for prefix caches: a question's G rollouts share their prompt, the critic reads
that group's rollouts, and the probe runs one question under several libraries. Behind a router
over several replicas (vLLM's ``vllm-router`` with ``--policy consistent_hash``, SGLang's
``smg``) those requests find one replica's cache only if they carry the same key in the header
the router hashes. A unit of work runs inside ``affinity(key)``; the roles' HTTP clients
(`stamp`) copy the key into every header the role names
(``RoleSettings.affinity_headers``, default ``X-Session-ID``; ``X-SMG-Routing-Key`` for smg).
Keys are made from the question id (`question_key`), so a resumed run sends a unit to the same
replica as before. Outside any unit no header is sent and the router picks as it likes.

The key lives in a context variable: asyncio tasks and LangGraph's worker threads copy the
context they were started from, so every call a unit makes, however deep, carries its key.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import httpx

_KEY: ContextVar[str | None] = ContextVar("grse_affinity_key", default=None)


def question_key(question_id: str) -> str:
    """The key of every unit of work about one question (its group, critic, probe runs and
    evaluation): stable across runs and resumes."""
    return f"q:{question_id}"


@contextmanager
def affinity(key: str) -> Iterator[None]:
    """Every request made inside this block (and in tasks it starts) carries ``key``."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def keyed_context(key: str) -> contextvars.Context:
    """A fresh context that holds only ``key`` (for work that must not inherit the rest of its
    caller's context, such as a team run outside the training graph's run)."""
    context = contextvars.Context()
    context.run(_KEY.set, key)
    return context


def current_key() -> str | None:
    """The key of the unit of work under way, if any."""
    return _KEY.get()


def stamp(request: httpx.Request, headers: Sequence[str]) -> None:
    """Put the current key, if any, in each of ``headers`` of ``request``."""
    key = _KEY.get()
    if key is not None:
        for name in headers:
            request.headers[name] = key
