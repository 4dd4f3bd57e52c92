"""Aggregation across questions: edit directions per (agent, skill) and induction patterns.

- Every usable credit (its skill still in the agent's library) is grouped by (agent, skill). A
  single credit maps to a direction without a model call (`direction_from_credit`); several are
  merged by one optimizer call, with the utility fixed to their mean (a number the model should
  not have to compute).
- Induction patterns (agent, failure_type, skill_id, action) come from accepted or repaired
  diagnoses; support counts DISTINCT questions; patterns are ordered by support.
- Agent feedback (not tied to a skill) is gathered per agent as induction evidence, with the
  agent's diagnoses in the low-reward groups (group mean reward at most `low_reward_threshold`)
  as its hard cases: Algorithm 1, line 11 takes induction evidence from the agent-level
  feedback and the low-reward groups as well as from the patterns, so a sound diagnosis the
  critic marked `no_edit` still reaches induce (the only way an empty library can use it).
- A credit's suggested refinement reaches the refine operator only when an accepted or
  repaired `refine` diagnosis of the same question names that (agent, skill): the attribution
  checks gate refinements as well as induction (§3.2: accepted diagnoses provide the
  failure-related edit directions). Without one the credit keeps its verdict and utility but
  not its suggestion (counted), so a harmful skill becomes a prune candidate.
- `w/o structure` results carry the same credits and agent feedback but no diagnoses and no
  checks, so their suggestions are used as they are; they give directions (prune and
  consolidate can act) and agent evidence, but no patterns.
- `w/ label`: when the critiques carry question categories, evidence is grouped by category.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.aggregation import aggregate_skeleton, bucket_by_skill, unique
from grse_graph.methods.grse import prompts
from grse_graph.methods.grse.critic_schema import CritiqueResult
from grse_graph.methods.plan import (
    Action,
    AgentEvidence,
    AggregationResult,
    DiagnosisCounts,
    DirectionVerdict,
    EditDirection,
    FailureType,
    InductionPattern,
    MergedDirection,
    PatternExample,
    SkillCredit,
)
from grse_graph.skills import Skill, SkillLibrary

DEFAULT_AGGREGATE_MAX_TOKENS = 1200
_NO_CATEGORY = "uncategorised"


class AggregationSettings(BaseModel):
    """Knobs of the aggregation. `low_utility_threshold`: a credit at or below it with no
    suggested refinement marks its skill low_utility (a prune candidate)."""

    model_config = ConfigDict(frozen=True)

    low_utility_threshold: float = Field(default=-0.5, ge=-1.0, le=1.0)
    max_examples: int = Field(default=3, ge=1)
    # A group whose mean reward is at most this is a low-reward group (induction evidence):
    # at the default, a group in which half the runs failed counts (measured on the demo: the
    # 1.5B critic's one sound hand-off diagnosis came from a [0, 0, 1, 1] group).
    low_reward_threshold: float = Field(default=0.5, ge=0.0, le=1.0)


class _Credit(BaseModel):
    question_id: str
    category: str | None
    credit: SkillCredit
    # Its suggestion was dropped: no usable `refine` diagnosis of its question names the pair.
    unattributed: bool = False


def direction_verdict(credit: SkillCredit, low_utility_threshold: float) -> DirectionVerdict:
    """The verdict one credit implies: redundant; refine when it suggests a change; low_utility
    when harmful (or at/below the threshold) with nothing to fix; keep otherwise."""
    if credit.verdict == "redundant":
        return "redundant"
    if credit.suggested_refinement.strip():
        return "refine"
    if credit.verdict == "harmful" or credit.utility <= low_utility_threshold:
        return "low_utility"
    return "keep"


_VERDICT_PRIORITY: tuple[DirectionVerdict, ...] = ("refine", "redundant", "low_utility", "keep")


def rule_based_merge(
    credits: Sequence[SkillCredit], low_utility_threshold: float
) -> MergedDirection:
    """Merge credits without a model: evidence and suggestions joined, the most frequent
    per-credit verdict (ties: refine, redundant, low_utility, keep)."""
    verdicts = [direction_verdict(c, low_utility_threshold) for c in credits]
    verdict = max(_VERDICT_PRIORITY, key=lambda v: (verdicts.count(v), -_VERDICT_PRIORITY.index(v)))
    return MergedDirection(
        summary=" | ".join(unique([c.evidence for c in credits if c.evidence.strip()])),
        suggested_edit=" | ".join(
            unique([c.suggested_refinement for c in credits if c.suggested_refinement.strip()])
        ),
        verdict=verdict,
    )


def _by_category(pairs: Sequence[tuple[str | None, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for category, text in pairs:
        if text.strip():
            out.setdefault(category or _NO_CATEGORY, []).append(text)
    return out


def direction_from_credit(
    item: _Credit, *, low_utility_threshold: float, with_labels: bool
) -> EditDirection:
    """A single credit's direction: its own evidence, suggestion and utility."""
    c = item.credit
    return EditDirection(
        agent=c.agent,
        skill_id=c.skill_id,
        summary=c.evidence or f"{c.verdict} on question {item.question_id}",
        suggested_edit=c.suggested_refinement,
        utility=c.utility,
        verdict=direction_verdict(c, low_utility_threshold),
        n_credits=1,
        question_ids=[item.question_id],
        redundant_with=[n for n in c.redundant_with if n != c.skill_id],
        conflicts_with=[n for n in c.conflicts_with if n != c.skill_id],
        evidence_by_category=_by_category([(item.category, c.evidence)]) if with_labels else {},
    )


def _render_credits(items: Sequence[_Credit], with_labels: bool) -> str:
    def line(item: _Credit) -> str:
        c = item.credit
        text = f"- [{item.question_id}] {c.verdict} u={c.utility:+.2f}: {c.evidence}"
        if c.suggested_refinement:
            text += f" | suggest: {c.suggested_refinement}"
        return text

    if not with_labels:
        return "\n".join(line(i) for i in items)
    groups: dict[str, list[_Credit]] = {}
    for item in items:
        groups.setdefault(item.category or _NO_CATEGORY, []).append(item)
    return "\n".join(
        f"Category {cat}:\n" + "\n".join(line(i) for i in group) for cat, group in groups.items()
    )


@dataclass(frozen=True)
class _GrseHooks:
    results: Sequence[CritiqueResult]
    settings: AggregationSettings
    merge_max_tokens: int
    with_labels: bool
    low_reward: frozenset[str]
    merged_schema: type[MergedDirection] = MergedDirection

    def single(self, item: _Credit) -> EditDirection:
        return direction_from_credit(
            item,
            low_utility_threshold=self.settings.low_utility_threshold,
            with_labels=self.with_labels,
        )

    def merge_messages(self, items: Sequence[_Credit], skill: Skill) -> list[BaseMessage]:
        first = items[0].credit
        return [
            SystemMessage(prompts.MERGE_SYSTEM),
            HumanMessage(
                prompts.MERGE_USER.format(
                    agent=first.agent,
                    skill_id=first.skill_id,
                    utility=_mean_utility(items),
                    n=len(items),
                    body=skill.body.strip(),
                    credits=_render_credits(items, self.with_labels),
                )
            ),
        ]

    def fallback(self, items: Sequence[_Credit]) -> MergedDirection:
        return rule_based_merge([i.credit for i in items], self.settings.low_utility_threshold)

    def merged(
        self, items: Sequence[_Credit], merged: MergedDirection, error: str | None
    ) -> EditDirection:
        # The utility is the credits' mean, not the model's: a number it should not compute.
        first = items[0].credit
        return EditDirection(
            agent=first.agent,
            skill_id=first.skill_id,
            summary=merged.summary,
            suggested_edit=merged.suggested_edit,
            utility=max(-1.0, min(1.0, _mean_utility(items))),
            verdict=merged.verdict,
            n_credits=len(items),
            question_ids=unique([i.question_id for i in items]),
            redundant_with=unique(
                [n for i in items for n in i.credit.redundant_with if n != first.skill_id]
            ),
            conflicts_with=unique(
                [n for i in items for n in i.credit.conflicts_with if n != first.skill_id]
            ),
            evidence_by_category=(
                _by_category([(i.category, i.credit.evidence) for i in items])
                if self.with_labels
                else {}
            ),
            merged_by_model=error is None,
            merge_error=error,
        )

    def agent_evidence(self, agent: str) -> AgentEvidence | None:
        return evidence_of_agent(
            self.results, agent, with_labels=self.with_labels, low_reward=self.low_reward
        )


def _mean_utility(items: Sequence[_Credit]) -> float:
    return sum(i.credit.utility for i in items) / len(items)


def induction_patterns(
    results: Sequence[CritiqueResult], *, max_examples: int = 3, with_labels: bool = False
) -> list[InductionPattern]:
    """Patterns of accepted/repaired diagnoses, support = distinct questions, by support desc."""
    Key = tuple[str, FailureType, str | None, Action]
    questions: dict[Key, list[str]] = {}
    examples: dict[Key, list[PatternExample]] = {}
    for result in results:
        for checked in result.diagnoses:
            if not checked.usable:
                continue
            d = checked.diagnosis
            key: Key = (d.agent, d.failure_type, d.skill_id, d.action)
            questions.setdefault(key, [])
            examples.setdefault(key, [])
            if result.question_id not in questions[key]:
                questions[key].append(result.question_id)
            examples[key].append(
                PatternExample(
                    question_id=result.question_id,
                    category=result.category,
                    diagnosis=d,
                    is_hypothesis=checked.is_hypothesis,
                    contrast=checked.contrast,
                )
            )
    patterns: list[InductionPattern] = []
    for key, qids in questions.items():
        agent, failure_type, skill_id, action = key
        # One example per distinct question first, so the evidence is as varied as possible.
        chosen: list[PatternExample] = []
        seen: set[str] = set()
        for ex in examples[key]:
            if ex.question_id not in seen:
                chosen.append(ex)
                seen.add(ex.question_id)
        chosen += [ex for ex in examples[key] if ex not in chosen]
        patterns.append(
            InductionPattern(
                agent=agent,
                failure_type=failure_type,
                skill_id=skill_id,
                action=action,
                support=len(qids),
                question_ids=qids,
                examples=chosen[:max_examples],
                evidence_by_category=(
                    _by_category(
                        [
                            (ex.category, ex.diagnosis.explanation or ex.diagnosis.correction)
                            for ex in examples[key]
                        ]
                    )
                    if with_labels
                    else {}
                ),
            )
        )
    patterns.sort(key=lambda p: (-p.support, p.agent, p.failure_type, p.skill_id or "", p.action))
    return patterns


# Failure types that no new skill can fix: not induction evidence.
_NOT_INDUCIBLE: frozenset[FailureType] = frozenset({"tool_failure", "uncertain_attribution"})


def low_reward_cases(result: CritiqueResult, agent: str) -> list[str]:
    """One agent's usable diagnoses in one group, as hard-case lines (any action, so a sound
    `no_edit` diagnosis counts; tool failures and uncertain attributions do not)."""
    lines = []
    for checked in result.diagnoses:
        d = checked.diagnosis
        if checked.usable and d.agent == agent and d.failure_type not in _NOT_INDUCIBLE:
            rule = f" Rule: {d.correction.strip()}" if d.correction.strip() else ""
            seen = f" {checked.contrast.text()}" if checked.contrast is not None else ""
            lines.append(f"[{d.failure_type}] {d.explanation.strip()}{rule}{seen}")
    return lines


def evidence_of_agent(
    results: Sequence[CritiqueResult],
    agent: str,
    *,
    with_labels: bool = False,
    low_reward: frozenset[str] = frozenset(),
) -> AgentEvidence | None:
    """One agent's evidence across questions: the critic's feedback, and the agent's
    diagnoses in the `low_reward` questions as hard cases (None when there is neither)."""
    items: list[str] = []
    missing: list[str] = []
    qids: list[str] = []
    cases: list[str] = []
    pairs: list[tuple[str | None, str]] = []
    for result in results:
        for fb in result.agent_feedback:
            if fb.agent != agent or not (fb.feedback.strip() or fb.missing_capability.strip()):
                continue
            items.append(fb.feedback)
            if fb.missing_capability.strip():
                missing.append(fb.missing_capability)
            if result.question_id not in qids:
                qids.append(result.question_id)
            pairs.append((result.category, fb.feedback))
        if result.question_id in low_reward:
            found = low_reward_cases(result, agent)
            cases += found
            if found and result.question_id not in qids:
                qids.append(result.question_id)
    if not items and not cases:
        return None
    return AgentEvidence(
        agent=agent,
        items=items,
        missing_capabilities=unique(missing),
        question_ids=qids,
        evidence_by_category=_by_category(pairs) if with_labels else {},
        hard_cases=unique(cases),
    )


def attributed_refinements(result: CritiqueResult) -> set[tuple[str, str]]:
    """The (agent, skill) pairs an accepted or repaired `refine` diagnosis of one question
    names: the only pairs whose credit suggestions may become refine directions."""
    return {
        (c.diagnosis.agent, c.diagnosis.skill_id)
        for c in result.diagnoses
        if c.usable and c.diagnosis.action == "refine" and c.diagnosis.skill_id is not None
    }


def _credits(results: Sequence[CritiqueResult]) -> list[_Credit]:
    """Every credit with its question. In a structured result, a suggestion that no usable
    `refine` diagnosis of the same question attributes is dropped (and marked)."""
    out: list[_Credit] = []
    for result in results:
        refinable = attributed_refinements(result)
        for credit in result.credits:
            unattributed = (
                result.structured
                and bool(credit.suggested_refinement.strip())
                and (credit.agent, credit.skill_id) not in refinable
            )
            if unattributed:
                credit = credit.model_copy(update={"suggested_refinement": ""})
            out.append(
                _Credit(
                    question_id=result.question_id,
                    category=result.category,
                    credit=credit,
                    unattributed=unattributed,
                )
            )
    return out


async def aggregate(
    results: Sequence[CritiqueResult],
    libraries: Mapping[str, SkillLibrary],
    provider: ChatModelProvider,
    *,
    max_tokens: int = DEFAULT_AGGREGATE_MAX_TOKENS,
    settings: AggregationSettings | None = None,
    group_rewards: Mapping[str, Sequence[float]] | None = None,
) -> AggregationResult:
    """Turn one iteration's critiques into edit directions, patterns and agent evidence.
    `group_rewards` (question id -> its group's rewards) marks the low-reward groups whose
    diagnoses become agent-level induction evidence (None: no group counts as low-reward)."""
    settings = settings or AggregationSettings()
    with_labels = any(r.category is not None for r in results)
    # Bucketed before counting, so a credit of a skill already gone is not counted unattributed.
    buckets = bucket_by_skill(
        _credits(results), lambda i: (i.credit.agent, i.credit.skill_id), libraries
    )
    low_reward = frozenset(
        qid
        for qid, rewards in (group_rewards or {}).items()
        if rewards and sum(rewards) / len(rewards) <= settings.low_reward_threshold
    )
    hooks = _GrseHooks(
        results=results,
        settings=settings,
        merge_max_tokens=max_tokens,
        with_labels=with_labels,
        low_reward=low_reward,
    )
    shared = await aggregate_skeleton(buckets, libraries, provider, hooks)
    counts = DiagnosisCounts()
    for r in results:
        counts = counts + r.counts
    return AggregationResult(
        directions=shared.directions,
        patterns=induction_patterns(
            results, max_examples=settings.max_examples, with_labels=with_labels
        ),
        agent_evidence=shared.agent_evidence,
        counts=counts,
        question_ids=unique([r.question_id for r in results]),
        with_labels=with_labels,
        structured=all(r.structured for r in results),
        optimizer_calls=shared.optimizer_calls,
        unattributed_refinements=sum(i.unattributed for b in buckets.values() for i in b),
    )
