"""Retained evidence T~_r (spec §3): repeated failures, near misses, reusable successes and
selection/usage mismatches, ranked by priority and capped.

The failure counter (failure key -> count) lasts for the whole run: it is part of the method
state, so a resumed run counts exactly as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from .trace import VerifiedTrace

Reason = Literal[
    "repeated_failure", "near_miss", "reusable_success", "retrieval_execution_mismatch"
]

REPEATED_FAILURE_THRESHOLD = 2
NEAR_MISS_STEP_RATIO = 0.8
REUSABLE_SUCCESS_MAX_STEP_RATIO = 0.6
MAX_RETAINED = 64
ERROR_PREFIX_CHARS = 80
PRIORITY: dict[Reason, float] = {
    "repeated_failure": 4.0,
    "retrieval_execution_mismatch": 3.0,
    "near_miss": 2.0,
    "reusable_success": 1.0,
}


class RetainedItem(BaseModel):
    """One kept trace with its reasons and priority."""

    trace: VerifiedTrace
    reasons: list[Reason]
    priority: float


class Retention(BaseModel):
    """The round's retained evidence and the failure counter after it."""

    items: list[RetainedItem] = Field(default_factory=list)
    failure_counts: dict[str, int] = Field(default_factory=dict)


def failure_key(trace: VerifiedTrace) -> str:
    """tau :: executors joined by '|' :: the first 80 characters of the normalised error."""
    executors = "|".join(trace.executors) or "unknown"
    error = " ".join(trace.error_message.lower().split())[:ERROR_PREFIX_CHARS] or "no_error"
    return f"{trace.task_type} :: {executors} :: {error}"


def is_near_miss(trace: VerifiedTrace) -> bool:
    """A failure with 0 < score < 1, or one that used >= 80% of its step budget."""
    if trace.score is not None and 0.0 < trace.score < 1.0:
        return True
    return bool(trace.max_steps and trace.steps / trace.max_steps >= NEAR_MISS_STEP_RATIO)


def is_reusable_success(trace: VerifiedTrace) -> bool:
    """A success without a step budget, or one within 60% of it."""
    if not trace.max_steps or trace.max_steps <= 0:
        return True
    return trace.steps / trace.max_steps <= REUSABLE_SUCCESS_MAX_STEP_RATIO


def has_mismatch(trace: VerifiedTrace) -> bool:
    """Something was selected and nothing was used, or a selected skill was not used."""
    selected = {s for skills in trace.selected.values() for s in skills}
    used = {s for skills in trace.used.values() for s in skills}
    return bool(selected) and (not used or bool(selected - used))


def priority(trace: VerifiedTrace, reasons: Sequence[Reason]) -> float:
    """Reason weights, +1 for a failure, + min(1, tool calls / 20)."""
    value = sum(PRIORITY[r] for r in reasons)
    if not trace.success:
        value += 1.0
    return value + min(1.0, trace.tool_calls / 20)


def retain(
    traces: Sequence[VerifiedTrace],
    failure_counts: Mapping[str, int],
    max_retained: int = MAX_RETAINED,
) -> Retention:
    """Check every trace once, in order (the failure counter moves as it goes), keep those with
    a reason, sort by priority (stable: ties keep trace order) and keep the first `max_retained`."""
    counts = dict(failure_counts)
    kept: list[RetainedItem] = []
    for trace in traces:
        reasons: list[Reason] = []
        if not trace.success:
            key = failure_key(trace)
            counts[key] = counts.get(key, 0) + 1
            if counts[key] >= REPEATED_FAILURE_THRESHOLD:
                reasons.append("repeated_failure")
            if is_near_miss(trace):
                reasons.append("near_miss")
        elif is_reusable_success(trace):
            reasons.append("reusable_success")
        if has_mismatch(trace):
            reasons.append("retrieval_execution_mismatch")
        if reasons:
            kept.append(
                RetainedItem(trace=trace, reasons=reasons, priority=priority(trace, reasons))
            )
    kept.sort(key=lambda item: -item.priority)
    return Retention(items=kept[:max_retained], failure_counts=counts)
