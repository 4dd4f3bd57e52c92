"""Token and time accounting per role.

`UsageLedger` is shared by every model a `ModelRoles` hands out. It learns about a call from a
LangChain callback handler attached to the role's model (calls, failures, token usage from the
`AIMessage.usage_metadata` or the raw ``token_usage``, wall time) and about HTTP attempts from
an httpx event hook on the role's HTTP clients: every request beyond one per call is a retry
made by the OpenAI client.

Servers that do not report usage are not counted as zero silently: such calls are counted in
``calls_without_usage``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from grse_graph.counts import Counts
from grse_graph.errors import RunawayGenerationStopped
from grse_graph.llm.provider import ROLES, RoleName


class RoleUsage(Counts):
    """What one role (or the total) consumed."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    calls_without_usage: int = 0
    wall_time_s: float = 0.0
    runaway_stops: int = 0
    """Streamed replies stopped early because they kept repeating (also counted as failures)."""


class PromptEvalStats(Counts):
    """Engine-side prompt processing, read from the embedded engine's log.

    ``evaluated_prompt_tokens`` are prompt tokens the engine actually computed;
    ``reused_prompt_tokens`` are prompt tokens served from its prefix cache. One completion is
    one model pass.
    ``prefix_reloads`` (from the slot pinning, not the log) are chat requests whose agent prefix
    had lost its slot to another prefix and was computed again.
    """

    model_config = ConfigDict(frozen=True)

    completions: int = 0
    evaluated_prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    prompt_eval_ms: float = 0.0
    generated_tokens: int = 0
    generation_ms: float = 0.0
    prefix_reloads: int = 0


_DERIVED_FIELDS = frozenset({"total", "cached_prompt_tokens"})


class UsageReport(BaseModel):
    """Usage per role plus the total; reports add up role by role."""

    model_config = ConfigDict(frozen=True)

    roles: dict[str, RoleUsage] = Field(default_factory=dict)
    engine: PromptEvalStats | None = None

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        # A written report carries its computed fields; reading it back recomputes them.
        if isinstance(data, Mapping):
            return {key: value for key, value in data.items() if key not in _DERIVED_FIELDS}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> RoleUsage:
        """Sum over roles."""
        result = RoleUsage()
        for usage in self.roles.values():
            result = result + usage
        return result

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cached_prompt_tokens(self) -> int:
        """Prompt tokens served from a prefix cache: as the servers reported them, or, where
        none did, as the embedded engine's log counted them."""
        reported = self.total.cached_prompt_tokens
        if reported or self.engine is None:
            return reported
        return self.engine.reused_prompt_tokens

    def role(self, role: RoleName) -> RoleUsage:
        """Usage of one role (zero if it made no call)."""
        return self.roles.get(role, RoleUsage())

    def __add__(self, other: UsageReport) -> UsageReport:
        names = list(dict.fromkeys([*self.roles, *other.roles]))
        roles = {
            name: self.roles.get(name, RoleUsage()) + other.roles.get(name, RoleUsage())
            for name in names
        }
        engine: PromptEvalStats | None = None
        if self.engine is not None or other.engine is not None:
            engine = (self.engine or PromptEvalStats()) + (other.engine or PromptEvalStats())
        return UsageReport(roles=roles, engine=engine)


class _Counters:
    """Mutable per-role counters; only touched under the ledger's lock."""

    def __init__(self) -> None:
        self.started = 0
        self.calls = 0
        self.failures = 0
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_prompt_tokens = 0
        self.calls_without_usage = 0
        self.wall_time_s = 0.0
        self.runaway_stops = 0

    def snapshot(self) -> RoleUsage:
        return RoleUsage(
            calls=self.calls,
            failures=self.failures,
            retries=max(0, self.requests - self.started),
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens,
            calls_without_usage=self.calls_without_usage,
            wall_time_s=self.wall_time_s,
            runaway_stops=self.runaway_stops,
        )


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def token_counts(result: LLMResult) -> tuple[int, int, int] | None:
    """(prompt, completion, cached prompt) tokens of one chat result, or None if unreported.

    Prefers the messages' ``usage_metadata`` (it carries ``input_token_details.cache_read``);
    falls back to the raw OpenAI ``token_usage`` in ``llm_output``. A response with several
    choices (``n`` > 1) reports one usage for all of them and langchain-openai copies it onto
    every choice's message, so each prompt's usage is read from its first message only.
    """
    found = False
    prompt = completion = cached = 0
    for generations in result.generations:
        for generation in generations:
            message = generation.message if isinstance(generation, ChatGeneration) else None
            usage = message.usage_metadata if isinstance(message, AIMessage) else None
            if usage is None:
                continue
            found = True
            prompt += usage.get("input_tokens", 0)
            completion += usage.get("output_tokens", 0)
            details: Mapping[str, Any] = usage.get("input_token_details") or {}
            cached += _int(details.get("cache_read"))
            break
    if found:
        return prompt, completion, cached
    raw = (result.llm_output or {}).get("token_usage")
    if isinstance(raw, Mapping) and "prompt_tokens" in raw:
        details = raw.get("prompt_tokens_details") or {}
        return (
            _int(raw.get("prompt_tokens")),
            _int(raw.get("completion_tokens")),
            _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0,
        )
    return None


class UsageLedger:
    """Thread-safe usage counters for all roles.

    Attach `callback(role)` to a role's chat model and call `count_request(role)` from its
    httpx clients' request hooks (`ModelRoles` does both).
    `attach_engine_stats` lets the embedded engine's log-derived prompt statistics appear in
    `report()`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, _Counters] = {role: _Counters() for role in ROLES}
        self._starts: dict[UUID, float] = {}
        self._engine_stats: Callable[[], PromptEvalStats] | None = None

    def callback(self, role: RoleName) -> BaseCallbackHandler:
        """A LangChain callback handler that records this role's calls."""
        return _RoleCallback(self, role)

    def attach_engine_stats(self, source: Callable[[], PromptEvalStats]) -> None:
        """Include the embedded engine's prompt statistics (e.g. ``engine.prompt_eval_stats``)
        in every report."""
        self._engine_stats = source

    def report(self) -> UsageReport:
        """A consistent snapshot of all roles."""
        with self._lock:
            roles = {name: counters.snapshot() for name, counters in self._counters.items()}
        engine = self._engine_stats() if self._engine_stats is not None else None
        return UsageReport(roles=roles, engine=engine)

    def write_json(self, path: Path, *, accumulate: bool = False) -> None:
        """Write `report()` as indented JSON (atomically: temporary file, then rename).

        With `accumulate`, the report already in `path` is added to this one, so a resumed run
        keeps the accounting of its earlier sessions.
        """
        report = self.report()
        if accumulate and path.exists():
            earlier = json.loads(path.read_text(encoding="utf-8"))
            report = UsageReport.model_validate(earlier) + report
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        temporary.replace(path)

    def _counters_of(self, role: str) -> _Counters:
        return self._counters.setdefault(role, _Counters())

    def count_request(self, role: str) -> None:
        """Count one HTTP attempt of ``role`` (every one beyond one per call is a retry)."""
        with self._lock:
            self._counters_of(role).requests += 1

    def _start(self, role: str, run_id: UUID) -> None:
        with self._lock:
            self._counters_of(role).started += 1
            self._starts[run_id] = time.monotonic()

    def _finish(
        self, role: str, run_id: UUID, result: LLMResult | None, *, runaway: bool = False
    ) -> None:
        now = time.monotonic()
        counts = token_counts(result) if result is not None else None
        with self._lock:
            counters = self._counters_of(role)
            started = self._starts.pop(run_id, None)
            if started is not None:
                counters.wall_time_s += now - started
            counters.calls += 1
            counters.runaway_stops += runaway
            if result is None:
                counters.failures += 1
            elif counts is None:
                counters.calls_without_usage += 1
            else:
                counters.prompt_tokens += counts[0]
                counters.completion_tokens += counts[1]
                counters.cached_prompt_tokens += counts[2]


class _RoleCallback(BaseCallbackHandler):
    """Forwards one role's chat-model events to the ledger."""

    run_inline = True
    raise_error = True

    def __init__(self, ledger: UsageLedger, role: RoleName) -> None:
        self._ledger = ledger
        self._role = role

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self._ledger._start(self._role, run_id)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        self._ledger._finish(self._role, run_id, response)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        runaway = isinstance(error, RunawayGenerationStopped)
        self._ledger._finish(self._role, run_id, None, runaway=runaway)
