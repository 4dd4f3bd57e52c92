"""The affinity key: one key on every request of one unit of work (a question's rollouts, critic
and probes share prompt prefixes), in the headers a router over replicas hashes
(docs/REPLICAS.md). Keys come from the question id, so a resumed run goes to the same replica;
the key lives in a context variable, which asyncio tasks and LangGraph's workers copy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import Context, ContextVar

import httpx

_KEY: ContextVar[str | None] = ContextVar("grse_affinity_key", default=None)


def question_key(question_id: str) -> str:
    """The key of every unit of work about one question, stable across runs and resumes."""
    return f"q:{question_id}"


@contextmanager
def affinity(key: str) -> Iterator[None]:
    """Every request made inside this block (and in tasks it starts) carries ``key``."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def keyed_context(key: str) -> Context:
    """A fresh context holding only ``key`` (a team run outside the training graph's run)."""
    context = Context()
    context.run(_KEY.set, key)
    return context


def stamp(request: httpx.Request, headers: Sequence[str]) -> None:
    """Put the current key, if any, in each of ``headers`` of ``request``."""
    key = _KEY.get()
    if key is not None:
        for name in headers:
            request.headers[name] = key
