"""Token and time accounting per role. `UsageLedger` learns about calls from a LangChain callback
on each role's model and about HTTP attempts from the role's HTTP clients: every request beyond
one per call is a retry by the OpenAI client. Calls whose server reports no usage are counted in
``calls_without_usage``, not silently as zero.
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
from langchain_core.messages import AIMessage
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
    """Prompt processing read from the embedded engine's log; ``prefix_reloads`` (from the slot
    pinning) are chat requests whose agent prefix had lost its slot and was computed again."""

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
        return sum(self.roles.values(), RoleUsage())

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
        roles = {
            name: self.roles.get(name, RoleUsage()) + other.roles.get(name, RoleUsage())
            for name in dict.fromkeys([*self.roles, *other.roles])
        }
        engine: PromptEvalStats | None = None
        if self.engine is not None or other.engine is not None:
            engine = (self.engine or PromptEvalStats()) + (other.engine or PromptEvalStats())
        return UsageReport(roles=roles, engine=engine)


class _Counters:
    """One role's counts; only touched under the ledger's lock."""

    def __init__(self) -> None:
        self.usage = RoleUsage()
        self.started = 0
        self.requests = 0  # every one beyond one per started call is a retry

    def snapshot(self) -> RoleUsage:
        return self.usage.model_copy(update={"retries": max(0, self.requests - self.started)})


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def token_counts(result: LLMResult) -> tuple[int, int, int] | None:
    """(prompt, completion, cached prompt) tokens of one chat result, or None if unreported:
    from the messages' ``usage_metadata``, else the raw ``token_usage``. An ``n`` > 1 response's
    one usage is copied onto every choice, so each prompt's is read from its first message."""
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
    """Thread-safe usage counters for all roles, fed by `callback` and `count_request`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, _Counters] = {role: _Counters() for role in ROLES}
        self._starts: dict[UUID, float] = {}
        self._engine_stats: Callable[[], PromptEvalStats] | None = None

    def callback(self, role: RoleName) -> BaseCallbackHandler:
        """A LangChain callback handler that records this role's calls."""
        return _RoleCallback(self, role)

    def attach_engine_stats(self, source: Callable[[], PromptEvalStats]) -> None:
        """Include the engine's prompt statistics (``engine.prompt_eval_stats``) in reports."""
        self._engine_stats = source

    def report(self) -> UsageReport:
        """A consistent snapshot of all roles."""
        with self._lock:
            roles = {name: counters.snapshot() for name, counters in self._counters.items()}
        engine = self._engine_stats() if self._engine_stats is not None else None
        return UsageReport(roles=roles, engine=engine)

    def write_json(self, path: Path, *, accumulate: bool = False) -> None:
        """Write `report()` as indented JSON, atomically; with `accumulate` added to the report
        already in `path` (a resumed run keeps its earlier sessions' accounting)."""
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

    def _finish(self, role: str, run_id: UUID, result: LLMResult | None, runaway: bool) -> None:
        now = time.monotonic()
        counts = token_counts(result) if result is not None else None
        prompt, completion, cached = counts or (0, 0, 0)
        with self._lock:
            counters = self._counters_of(role)
            started = self._starts.pop(run_id, None)
            counters.usage += RoleUsage(
                calls=1,
                failures=int(result is None),
                prompt_tokens=prompt,
                completion_tokens=completion,
                cached_prompt_tokens=cached,
                calls_without_usage=int(result is not None and counts is None),
                wall_time_s=0.0 if started is None else now - started,
                runaway_stops=int(runaway),
            )


class _RoleCallback(BaseCallbackHandler):
    """Forwards one role's chat-model events to the ledger."""

    run_inline = True
    raise_error = True

    def __init__(self, ledger: UsageLedger, role: RoleName) -> None:
        self._ledger = ledger
        self._role = role

    def on_chat_model_start(self, *args: Any, run_id: UUID, **kwargs: Any) -> None:
        self._ledger._start(self._role, run_id)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        self._ledger._finish(self._role, run_id, response, runaway=False)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._ledger._finish(self._role, run_id, None, isinstance(error, RunawayGenerationStopped))
