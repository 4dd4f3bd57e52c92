"""MASkills' aggregation: per-skill gradients and per-agent induction evidence (spec §3).

Level 1 (trajectories -> skills): the credits of each (agent, skill) still in that agent's
library are bucketed across the iteration's trajectories. Exactly one credit maps directly to
an `EditDirection` with no model call; two or more are merged by ONE optimizer call per skill.
If that call's output is unusable, the reference's rule-based fallback is used and the reason is
recorded on the direction (`merge_error`), not hidden.

Level 2 (skills -> agents), plain text processing: each agent's residual summary (residuals
that ask for a new skill, de-duplicated, at most `max_residuals`) and its hard cases (every
trajectory with reward at or below the threshold gives EVERY agent a line "reward=...;
residual=...; missing=...", whatever the critic blamed). Both are that agent's induction
evidence. Trajectories are taken in the iteration's file order (batch order), not in the
order critic calls finished (the reference's order was nondeterministic, spec D-8).

The reference has no level 3 (agents -> topologies); neither has this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.aggregation import aggregate_skeleton, bucket_by_skill, unique
from grse_graph.methods.maskills import prompts
from grse_graph.methods.maskills.record import MaskillsRecord
from grse_graph.methods.maskills.schema import HardCase, MaskillsCredit, MergedGradient
from grse_graph.methods.maskills.settings import MaskillsSettings
from grse_graph.methods.plan import (
    AgentEvidence,
    AggregationResult,
    DirectionVerdict,
    EditDirection,
)
from grse_graph.skills import Skill, SkillLibrary

# Reference values (spec §3): the skill body shown to the merge call, the fallback summary's
# length and the prefix residual summaries are de-duplicated on.
MERGE_BODY_CHARS = 1200
FALLBACK_SUMMARY_CHARS = 600
RESIDUAL_DEDUPE_CHARS = 80
RESIDUAL_SEPARATOR = " | "


class SkillCreditItem(BaseModel):
    """One credit of a skill with the question it came from."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    credit: MaskillsCredit


def single_verdict(credit: MaskillsCredit) -> DirectionVerdict:
    """The direct mapping of one credit (spec §3): helped or neutral -> refine when an edit is
    suggested, else keep; redundant -> redundant; harmful -> low_utility."""
    if credit.verdict == "redundant":
        return "redundant"
    if credit.verdict == "harmful":
        return "low_utility"
    return "refine" if credit.suggested_edit.strip() else "keep"


def _links(items: Sequence[SkillCreditItem], skill_id: str, field: str) -> list[str]:
    return unique(
        [n for i in items for n in getattr(i.credit, field) if n.strip() and n != skill_id]
    )


def direction_from_single(item: SkillCreditItem) -> EditDirection:
    """A skill with exactly one credit: its own evidence, edit, links and delta, no model."""
    c = item.credit
    return _direction(
        [item],
        summary=c.evidence,
        suggested_edit=c.suggested_edit,
        utility=c.utility_delta,
        credit_utility_mean=c.utility_delta,
        verdict=single_verdict(c),
        redundant_with=_links([item], c.skill_id, "redundant_with"),
    )


def _direction(items: Sequence[SkillCreditItem], **fields: Any) -> EditDirection:
    """The direction of the skill `items` credit: `fields` and what every direction carries
    (its skill, how many credits, their questions and conflict links)."""
    first = items[0].credit
    return EditDirection(
        agent=first.agent,
        skill_id=first.skill_id,
        n_credits=len(items),
        question_ids=unique([i.question_id for i in items]),
        conflicts_with=_links(items, first.skill_id, "conflicts_with"),
        **fields,
    )


def fallback_merge(items: Sequence[SkillCreditItem], prune_threshold: float) -> MergedGradient:
    """The reference's merge when the optimizer output is unusable: mean delta, evidence
    joined, the first suggested edit; low_utility at or below the prune threshold, else refine
    with an edit, else keep. Redundancy links are the union of the credits' (so consolidation
    still sees them)."""
    mean = sum(i.credit.utility_delta for i in items) / len(items)
    edit = next((i.credit.suggested_edit for i in items if i.credit.suggested_edit.strip()), "")
    if mean <= prune_threshold:
        verdict: DirectionVerdict = "low_utility"
    else:
        verdict = "refine" if edit else "keep"
    summary = " | ".join(unique([i.credit.evidence for i in items if i.credit.evidence.strip()]))
    return MergedGradient(
        summary=summary[:FALLBACK_SUMMARY_CHARS],
        verdict=verdict,
        suggested_edit=edit,
        redundant_with=_links(items, items[0].credit.skill_id, "redundant_with"),
        utility_score=mean,
    )


def render_credit_lines(items: Sequence[SkillCreditItem]) -> str:
    """One numbered line per credit for the merge prompt."""
    lines = []
    for n, item in enumerate(items, start=1):
        c = item.credit
        line = f"{n}. [{c.verdict}, {c.utility_delta:+.2f}] {c.evidence}"
        line += f" | edit: {c.suggested_edit or 'none'}"
        if c.redundant_with:
            line += f" | redundant with: {', '.join(c.redundant_with)}"
        lines.append(line)
    return "\n".join(lines)


def merge_messages(skill: Skill, agent: str, items: Sequence[SkillCreditItem]) -> list[BaseMessage]:
    """The merge call's messages for one skill."""
    return [
        SystemMessage(prompts.MERGE_SYSTEM),
        HumanMessage(
            prompts.MERGE_USER.format(
                agent=agent,
                name=skill.name,
                description=skill.description,
                body=skill.body.strip()[:MERGE_BODY_CHARS],
                n=len(items),
                credits=render_credit_lines(items),
            )
        ),
    ]


@dataclass(frozen=True)
class MaskillsHooks:
    """MASkills' choices inside the shared aggregation skeleton."""

    records: Sequence[MaskillsRecord]
    settings: MaskillsSettings
    merged_schema: type[MergedGradient] = MergedGradient

    @property
    def merge_max_tokens(self) -> int:
        return self.settings.merge_max_tokens

    def single(self, item: SkillCreditItem) -> EditDirection:
        return direction_from_single(item)

    def merge_messages(self, items: Sequence[SkillCreditItem], skill: Skill) -> list[BaseMessage]:
        return merge_messages(skill, items[0].credit.agent, items)

    def fallback(self, items: Sequence[SkillCreditItem]) -> MergedGradient:
        return fallback_merge(items, self.settings.prune_utility_threshold)

    def merged(
        self, items: Sequence[SkillCreditItem], merged: MergedGradient, error: str | None
    ) -> EditDirection:
        # Unlike GRSE's, the utility is the merge's own score; the credits' mean is kept beside
        # it for the moving-average utility rule.
        skill_id = items[0].credit.skill_id
        mean = sum(i.credit.utility_delta for i in items) / len(items)
        return _direction(
            items,
            summary=merged.summary,
            suggested_edit="" if merged.verdict == "keep" else merged.suggested_edit,
            utility=merged.utility_score,
            credit_utility_mean=max(-1.0, min(1.0, mean)),
            verdict=merged.verdict,
            redundant_with=[
                n for n in unique(merged.redundant_with) if n.strip() and n != skill_id
            ],
            merged_by_model=error is None,
            merge_error=error,
        )

    def agent_evidence(self, agent: str) -> AgentEvidence | None:
        return evidence_of_agent(self.records, agent, self.settings)


def credit_buckets(
    records: Sequence[MaskillsRecord], libraries: Mapping[str, SkillLibrary]
) -> dict[tuple[str, str], list[SkillCreditItem]]:
    """Credits per (agent, skill) across trajectories, in record order; skills no longer in
    the agent's library are skipped."""
    items = [
        SkillCreditItem(question_id=record.question_id, credit=credit)
        for record in records
        if record.result is not None
        for credit in record.result.credits
    ]
    return bucket_by_skill(items, lambda i: (i.credit.agent, i.credit.skill_id), libraries)


def residual_summary(records: Sequence[MaskillsRecord], agent: str, max_residuals: int) -> str:
    """An agent's residuals that ask for a new skill, de-duplicated on their first 80
    characters, each with "(missing: ...)" when given, the first `max_residuals` joined."""
    kept: list[str] = []
    seen: set[str] = set()
    for record in records:
        residual = record.result.residual_of(agent) if record.result is not None else None
        if residual is None or not residual.needs_new_skill or not residual.summary.strip():
            continue
        key = residual.summary.strip()[:RESIDUAL_DEDUPE_CHARS]
        if key in seen:
            continue
        seen.add(key)
        text = residual.summary.strip()
        if residual.missing_capability.strip():
            text += f" (missing: {residual.missing_capability.strip()})"
        kept.append(text)
    return RESIDUAL_SEPARATOR.join(kept[:max_residuals])


def hard_cases(records: Sequence[MaskillsRecord], agent: str, threshold: float) -> list[HardCase]:
    """One line per trajectory with reward <= threshold, for this agent: the reward plus its
    residual summary and missing capability when the critic gave them (a failed critic call
    leaves the bare reward, as in the reference)."""
    out: list[HardCase] = []
    for record in records:
        if record.reward > threshold:
            continue
        residual = record.result.residual_of(agent) if record.result is not None else None
        out.append(
            HardCase(
                question_id=record.question_id,
                reward=record.reward,
                residual=residual.summary.strip() if residual is not None else "",
                missing=residual.missing_capability.strip() if residual is not None else "",
            )
        )
    return out


def evidence_of_agent(
    records: Sequence[MaskillsRecord], agent: str, settings: MaskillsSettings
) -> AgentEvidence | None:
    """One agent's induction evidence: its residual summary (in `items`) and hard cases (None
    when it has neither)."""
    summary = residual_summary(records, agent, settings.max_residuals)
    cases = hard_cases(records, agent, settings.hard_case_threshold)
    if not summary and not cases:
        return None
    missing = unique(
        [
            r.missing_capability.strip()
            for rec in records
            if rec.result is not None
            for r in rec.result.residuals
            if r.agent == agent and r.needs_new_skill and r.missing_capability.strip()
        ]
    )
    questions = [
        rec.question_id
        for rec in records
        if rec.result is not None
        and any(r.agent == agent and r.needs_new_skill for r in rec.result.residuals)
    ]
    return AgentEvidence(
        agent=agent,
        items=[summary] if summary else [],
        missing_capabilities=missing,
        question_ids=unique([*questions, *(c.question_id for c in cases)]),
        hard_cases=[c.line() for c in cases],
    )


def invocation_counts(records: Sequence[MaskillsRecord]) -> dict[str, dict[str, int]]:
    """Per agent, per skill: the trace entries attributed to it this iteration (spec §4)."""
    counts: dict[str, dict[str, int]] = {}
    for record in records:
        for agent, entries in record.trace.agents.items():
            per_agent = counts.setdefault(agent, {})
            for entry in entries:
                for name in entry.skills:
                    per_agent[name] = per_agent.get(name, 0) + 1
    return counts


async def aggregate(
    records: Sequence[MaskillsRecord],
    libraries: Mapping[str, SkillLibrary],
    provider: ChatModelProvider,
    settings: MaskillsSettings,
) -> AggregationResult:
    """The iteration's plan: directions per credited skill, induction evidence per agent, and
    the iteration's invocation counts."""
    shared = await aggregate_skeleton(
        credit_buckets(records, libraries),
        libraries,
        provider,
        MaskillsHooks(records=records, settings=settings),
    )
    return AggregationResult(
        directions=shared.directions,
        agent_evidence=shared.agent_evidence,
        question_ids=unique([r.question_id for r in records]),
        optimizer_calls=shared.optimizer_calls,
        invocations=invocation_counts(records),
    )
