"""How SkillMAS's operators write: the optimizer's reply schemas, the prompt pieces they
share (policy cards; the code's action pattern analysis and choice of example episodes,
spec §5.2), the skill spec a draft becomes, and the checks a new skill passes before the pool
(content validation and Jaccard dedup, spec §5.7-§5.8)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from grse_graph.errors import GrseError, ModelRequestRefused, StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.methods.operators.ask import ask_optimizer
from grse_graph.skills import Skill

from .skills import (
    CARD_CHARS,
    LINEAGE_KEY,
    ORIGIN_KEY,
    TAGS_KEY,
    TASK_KEY,
    content_problems,
    near_duplicate,
    policy_cards,
)
from .trace import VerifiedTrace
from .work import EvolutionAction, EvolutionWork

M = TypeVar("M", bound=BaseModel)

SYSTEM = "You write reusable skills (SKILL.md bodies) for a question-answering team."
BODY_FORMAT = (
    "Write the skill body in markdown with exactly these sections: `## When to use` "
    "(applicability), `## Steps` (numbered procedure), `## Guards` (preconditions and don'ts), "
    "`## Checks` (what to verify before answering). No front matter."
)
# A refused request or an unusable reply costs one skill this round; anything else (an
# unreachable endpoint) stops the run, as it does for every method.
RECOVERABLE: tuple[type[GrseError], ...] = (StructuredOutputError, ModelRequestRefused)


class DrawnSkill(BaseModel):
    """What a writing call returns (the owner agent field is added per team)."""

    description: str = Field(description="what the skill does and when to use it, one sentence")
    body: str = Field(description="the markdown body")


class RefinedBody(BaseModel):
    body: str = Field(description="the improved markdown body")


class NarrowedDescription(BaseModel):
    description: str = Field(description="a narrower description: exactly when the skill applies")


def owner_schema(agents: Sequence[str]) -> type[DrawnSkill]:
    """`DrawnSkill` with an `agent` field limited to the team's agents (LEARN names the
    owner itself)."""
    owner: Any = Literal[tuple(agents)]
    return create_model(
        "OwnedSkillDraft",
        __base__=DrawnSkill,
        agent=(owner, Field(description="the team agent whose step this skill guides")),
    )


async def write(
    provider: ChatModelProvider, schema: type[M], prompt: str, temperature: float, max_tokens: int
) -> M | str:
    """The optimizer's reply to `prompt`, or why there is none."""
    reply = await ask_optimizer(
        provider,
        schema,
        [SystemMessage(SYSTEM), HumanMessage(prompt)],
        max_tokens=max_tokens,
        sampling=SamplingSettings(temperature=temperature),
        recoverable=RECOVERABLE,
    )
    return f"{type(reply).__name__}: {reply}" if isinstance(reply, GrseError) else reply


def cards_block(work: EvolutionWork, query: str) -> list[str]:
    """The policy cards for `query` as prompt lines (none when no card matches)."""
    cards = policy_cards(work.libraries, work.status, query)
    lines = [f"### {c.description}\n{c.body[:CARD_CHARS]}" for c in cards]
    return ["Reference skills (adapt, do not copy):", *lines] if lines else []


def new_skill(
    name: str,
    draft: DrawnSkill,
    agent: str,
    tau: str,
    origin: str,
    tags: Sequence[str] = (),
) -> Skill:
    """The SKILL.md a draft becomes: its lineage, origin, task type and tags in metadata
    (`SkillError` when it is not a valid skill)."""
    metadata = {LINEAGE_KEY: f"{agent}/{name}", ORIGIN_KEY: origin, TASK_KEY: tau}
    if tags:
        metadata[TAGS_KEY] = ",".join(tags)
    return Skill.build(
        name=name,
        description=" ".join(draft.description.split())[:900] or f"Strategy for {tau} questions",
        body=draft.body.strip(),
        metadata=metadata,
    )


def admit(
    work: EvolutionWork,
    agent: str,
    skill: Skill,
    action: EvolutionAction,
    ignore: str | None = None,
) -> tuple[bool, EvolutionAction]:
    """Content validation and dedup (against every library but `ignore`, a revised copy's
    parent), then the pool. Returns whether the skill got in and the action to record
    (`action`, or its rejection with the reason)."""
    problems = content_problems(skill.body)
    duplicate = near_duplicate(skill.description, skill.body, work.libraries, ignore=ignore)
    if problems or duplicate is not None:
        why = "; ".join(problems)
        if duplicate is not None and not why:
            why = f"near duplicate of {duplicate[0]} ({duplicate[1]:.2f})"
        return False, action.model_copy(update={"kind": "rejected", "detail": why})
    work.add_shadow(agent, skill)
    return True, action


MAX_EXAMPLES, MAX_TRACE_LINES = 3, 20


def action_names(trace: VerifiedTrace) -> list[str]:
    """The tool (or pseudo-action) names of an action trace, in order."""
    return [line.split(" > ", 1)[-1].split("(", 1)[0].strip() for line in trace.action_trace]


def _ngrams(names: Sequence[str], n: int) -> list[str]:
    return [" -> ".join(names[i : i + n]) for i in range(len(names) - n + 1)]


def action_pattern_summary(traces: Sequence[VerifiedTrace]) -> str:
    """The code's pre-computed action pattern analysis of one task type's episodes
    (`extractActionPatterns`, `formatPatternSummary`): counts and mean steps per side, the top
    8 tools per side, the bigram and trigram sequences found only in successes or only in
    failures (first-seen order, at most 10 each), the top 5 success bigrams."""
    wins = [t for t in traces if t.success]
    losses = [t for t in traces if not t.success]

    def sequences(ts: Sequence[VerifiedTrace]) -> list[str]:
        grams = [g for t in ts for n in (2, 3) for g in _ngrams(action_names(t), n)]
        return list(dict.fromkeys(grams))

    def counted(pairs: Sequence[tuple[str, int]]) -> str:
        return ", ".join(f"{a} x{n}" for a, n in pairs) or "-"

    def mean_steps(ts: Sequence[VerifiedTrace]) -> float:
        return sum(t.steps for t in ts) / len(ts) if ts else 0.0

    def top_tools(ts: Sequence[VerifiedTrace]) -> str:
        return counted(Counter(a for t in ts for a in action_names(t)).most_common(8))

    def only(grams: list[str], other: list[str]) -> str:
        return "; ".join([g for g in grams if g not in other][:10]) or "-"

    won, lost = sequences(wins), sequences(losses)
    bigrams = Counter(g for t in wins for g in _ngrams(action_names(t), 2))
    return "\n".join(
        [
            f"successes {len(wins)} (mean tool calls {mean_steps(wins):.1f}), failures "
            f"{len(losses)} (mean tool calls {mean_steps(losses):.1f})",
            f"top actions in successes: {top_tools(wins)}",
            f"top actions in failures: {top_tools(losses)}",
            f"sequences only in successes: {only(won, lost)}",
            f"sequences only in failures: {only(lost, won)}",
            f"top success bigrams: {counted(bigrams.most_common(5))}",
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
