"""The evidence LEARN and CREATE show the optimizer: the code's pre-computed action pattern
analysis (`extractActionPatterns`, `formatPatternSummary`) and its choice of example episodes
(`scoreSuccessExample`, `scoreFailureExample`), spec §5.2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel

from .trace import VerifiedTrace

MAX_EXAMPLES, MAX_TRACE_LINES = 3, 20


def action_names(trace: VerifiedTrace) -> list[str]:
    """The tool (or pseudo-action) names of an action trace, in order."""
    return [line.split(" > ", 1)[-1].split("(", 1)[0].strip() for line in trace.action_trace]


def _ngrams(names: Sequence[str], n: int) -> list[str]:
    return [" -> ".join(names[i : i + n]) for i in range(len(names) - n + 1)]


class ActionPatterns(BaseModel):
    """The code's pre-computed action pattern analysis (`extractActionPatterns`) of one task
    type's episodes: counts and mean steps per side, the top tools per side, the bigram and
    trigram sequences found only in successes or only in failures, the top success bigrams."""

    successes: int
    failures: int
    success_mean_steps: float
    failure_mean_steps: float
    success_tools: list[tuple[str, int]]
    failure_tools: list[tuple[str, int]]
    success_only: list[str]
    failure_only: list[str]
    success_bigrams: list[tuple[str, int]]


def extract_action_patterns(traces: Sequence[VerifiedTrace]) -> ActionPatterns:
    """Tool frequencies, bigrams and trigrams of successes against failures (first-seen order
    for the set differences, at most 10 each; top 8 tools per side; top 5 success bigrams)."""
    wins = [t for t in traces if t.success]
    losses = [t for t in traces if not t.success]

    def sequences(ts: Sequence[VerifiedTrace]) -> list[str]:
        out: list[str] = []
        for t in ts:
            names = action_names(t)
            out += _ngrams(names, 2) + _ngrams(names, 3)
        return list(dict.fromkeys(out))

    won, lost = sequences(wins), sequences(losses)
    bigrams = Counter(g for t in wins for g in _ngrams(action_names(t), 2))
    return ActionPatterns(
        successes=len(wins),
        failures=len(losses),
        success_mean_steps=sum(t.steps for t in wins) / len(wins) if wins else 0.0,
        failure_mean_steps=sum(t.steps for t in losses) / len(losses) if losses else 0.0,
        success_tools=Counter(a for t in wins for a in action_names(t)).most_common(8),
        failure_tools=Counter(a for t in losses for a in action_names(t)).most_common(8),
        success_only=[g for g in won if g not in set(lost)][:10],
        failure_only=[g for g in lost if g not in set(won)][:10],
        success_bigrams=bigrams.most_common(5),
    )


def format_pattern_summary(p: ActionPatterns) -> str:
    """The pattern analysis as the LEARN prompt shows it (`formatPatternSummary`)."""

    def counted(pairs: Sequence[tuple[str, int]]) -> str:
        return ", ".join(f"{a} x{n}" for a, n in pairs) or "-"

    return "\n".join(
        [
            f"successes {p.successes} (mean tool calls {p.success_mean_steps:.1f}), failures "
            f"{p.failures} (mean tool calls {p.failure_mean_steps:.1f})",
            f"top actions in successes: {counted(p.success_tools)}",
            f"top actions in failures: {counted(p.failure_tools)}",
            "sequences only in successes: " + ("; ".join(p.success_only) or "-"),
            "sequences only in failures: " + ("; ".join(p.failure_only) or "-"),
            f"top success bigrams: {counted(p.success_bigrams)}",
        ]
    )


def _density(trace: VerifiedTrace) -> float:
    return min(1.0, len(trace.action_trace) / MAX_TRACE_LINES)


def _used_count(trace: VerifiedTrace) -> int:
    return len({s for names in trace.used.values() for s in names})


def success_example_score(trace: VerifiedTrace) -> float:
    """0.45 / steps + 0.35 trace density + 0.20 / used skills (steps and skills at least 1:
    a tool-free episode counts as one step)."""
    return 0.45 / max(1, trace.steps) + 0.35 * _density(trace) + 0.20 / max(1, _used_count(trace))


def failure_example_score(trace: VerifiedTrace, success_mean_steps: float | None) -> float:
    """0.35 near-miss closeness + 0.25 trace density + 0.20 overlap + 0.20 error signal;
    closeness = 1 - |steps - mean success steps| / mean success steps in [0, 1] (0.4 without
    successes; with a mean of 0, 1 for a tool-free failure)."""
    if success_mean_steps is None:
        closeness = 0.4
    elif success_mean_steps <= 0:
        closeness = 1.0 if trace.steps == 0 else 0.0
    else:
        closeness = 1 - abs(trace.steps - success_mean_steps) / success_mean_steps
    closeness = max(0.0, min(1.0, closeness))
    overlap = 0.25 * max(0, _used_count(trace) - 1) + (0.35 if len(trace.executors) > 1 else 0)
    return (
        0.35 * closeness
        + 0.25 * _density(trace)
        + 0.20 * min(1.0, overlap)
        + 0.20 * (1.0 if trace.error_message else 0.2)
    )


def select_success_examples(
    traces: Sequence[VerifiedTrace], limit: int = MAX_EXAMPLES
) -> list[VerifiedTrace]:
    """The best `limit` successes by the success-example score (ties keep trace order)."""
    return sorted(traces, key=lambda t: -success_example_score(t))[:limit]


def select_failure_examples(
    failures: Sequence[VerifiedTrace],
    successes: Sequence[VerifiedTrace],
    limit: int = MAX_EXAMPLES,
) -> list[VerifiedTrace]:
    """The best `limit` failures by the failure-example score (ties keep trace order)."""
    mean = sum(t.steps for t in successes) / len(successes) if successes else None
    return sorted(failures, key=lambda t: -failure_example_score(t, mean))[:limit]


def episode_block(title: str, traces: Sequence[VerifiedTrace]) -> list[str]:
    """Prompt lines for example episodes: each one's summary and outcome, then its first
    trace lines."""
    lines = [title]
    for t in traces[:MAX_EXAMPLES]:
        lines.append(f"- {t.summary} ({t.error_message or 'correct'})")
        lines.extend(f"    {a}" for a in t.action_trace[:MAX_TRACE_LINES])
    return lines
