"""Shared first replies for a group: the first agent's first call made once with n=G.

Every rollout of a group sends the first agent the same prompt, so one request with `n` = G
choices replaces G requests and the engine computes that prompt once. The first rollout of a
group to start samples the openings (its siblings wait for the same call), the result is
written to the run folder before any rollout uses it, and a resumed run reads it back, so the
call is never paid for twice. A server that ignores `n` answers with one choice; that choice is
used by rollout 0, the others make their own first call, and later groups of the run are not
asked for `n` again. A group with a finished rollout (a resumed run) is not sampled at all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from grse_graph.jsonl import JsonlStore
from grse_graph.team.agent import PresampledReply

from .records import OpeningRecord

logger = logging.getLogger(__name__)

Sampler = Callable[[], Awaitable[OpeningRecord]]


class GroupOpenings:
    """Hands each rollout its share of its group's n-choice first call (or None)."""

    def __init__(self, store: JsonlStore[OpeningRecord]) -> None:
        self._store = store
        self._pending: dict[str, asyncio.Future[OpeningRecord]] = {}
        # Appends run in a worker thread; the lock keeps them in the order the calls finished.
        self._append_lock = asyncio.Lock()
        # A resumed run remembers what the server did before the crash.
        self.n_ignored = any(len(r.replies) < r.requested for r in store.read())

    async def reply_for(
        self, unit_id: str, group_index: int, sample: Sampler, *, may_sample: bool = True
    ) -> PresampledReply | None:
        """Rollout `group_index`'s presampled first reply for the group `unit_id`; the call is
        made (once) only when `may_sample` and the server has not shown that it ignores `n`."""
        record = self._store.get(unit_id)
        if record is None:
            if self.n_ignored or not may_sample:
                return None
            record = await self._sample_once(unit_id, sample)
        if group_index < len(record.replies):
            return record.replies[group_index]
        return None

    async def _sample_once(self, unit_id: str, sample: Sampler) -> OpeningRecord:
        future = self._pending.get(unit_id)
        owner = future is None  # only the caller that started the call records it
        if future is None:
            future = asyncio.ensure_future(sample())
            self._pending[unit_id] = future
        try:
            record = await asyncio.shield(future)
        except BaseException:
            # A failed call is retried by the next rollout that asks, not cached as a failure.
            if self._pending.get(unit_id) is future and future.done():
                del self._pending[unit_id]
            raise
        if owner and self._store.get(unit_id) is None:
            # Written off the event loop (a graph server refuses blocking file I/O on it).
            async with self._append_lock:
                await asyncio.to_thread(self._store.append, record)
            if len(record.replies) < record.requested and not self.n_ignored:
                self.n_ignored = True
                logger.warning(
                    "the actor endpoint returned %d of %d choices for n=%d: it ignores `n`, so "
                    "each rollout makes its own first-agent call from here on",
                    len(record.replies),
                    record.requested,
                    record.requested,
                )
        if owner:
            # Only now is the record in the store for rollouts that ask later.
            self._pending.pop(unit_id, None)
        return record
