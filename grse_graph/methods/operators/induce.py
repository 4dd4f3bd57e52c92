"""induce: a new SKILL.md from recurring failure evidence, while the library is under its limit.

The evidence E_i of an agent (GRSE Algorithm 1, line 11) is, best first: the induction
patterns with action induce (best supported first), then the agent-level evidence: the critic's
feedback on the agent and its diagnoses in the low-reward groups (`AgentEvidence.hard_cases`).
Agent-level evidence asks for a new skill when it names a missing capability, or whenever the
agent's library is empty: with no skill to refine, a sound diagnosis marked `no_edit` or plain
feedback can only act through induce, so an empty library can gain its first skill from it.

The optimizer is asked for a general procedure (when it applies, steps, check) and sees the
agent's role, the task (with its guidance) and the failure pattern across questions, with
question-specific names and numbers masked. The drafted body passes the memorisation check
(`memorisation.py`) or is rejected with the finding in the record. The name is normalised to
the Agent Skills rules and made unique, the description put on one line and capped, the body
capped at the token cap. Provenance (operator, iteration, supporting questions) is written to
the skill's metadata.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from grse_graph.errors import GrseError
from grse_graph.methods.operators import prompts
from grse_graph.methods.operators.base import (
    Declined,
    OperatorContext,
    OperatorOutput,
    make_record,
    skip_record,
)
from grse_graph.methods.operators.draft import draft_skill
from grse_graph.methods.operators.driver import LibraryOutput, each_library_async
from grse_graph.methods.operators.schema import OperatorEvidence, OperatorRecord
from grse_graph.methods.operators.text import (
    diagnosis_example_lines,
    normalise_description,
    normalise_name,
    provenance_line,
)
from grse_graph.methods.plan import AgentEvidence, AggregationResult, InductionPattern
from grse_graph.skills import AGENT_KEY, Skill, SkillLibrary
from grse_graph.skills.limits import AGENT_PATTERN


class InduceEvidence(BaseModel):
    """One reason to induce a skill: a pattern or an agent's feedback, rendered for the prompt."""

    problem: str
    text: str
    evidence: OperatorEvidence
    fallback_name: str


def _problem(failure_type: str) -> str:
    hint = prompts.FAILURE_TYPE_HINTS.get(failure_type)
    name = failure_type.replace("_", " ")
    return f"{name}: {hint}" if hint else name


def _from_pattern(p: InductionPattern, max_examples: int) -> InduceEvidence:
    lines = diagnosis_example_lines(p, max_examples)
    for category, items in p.evidence_by_category.items():
        lines.append(f"Category {category}: " + " | ".join(items[:max_examples]))
    return InduceEvidence(
        problem=_problem(p.failure_type),
        text="\n".join(lines) or "(no examples)",
        evidence=OperatorEvidence(
            support=p.support,
            failure_type=p.failure_type,
            question_ids=list(p.question_ids),
            summary=p.examples[0].diagnosis.explanation if p.examples else "",
        ),
        fallback_name=p.failure_type,
    )


# Hard cases of GRSE's low-reward groups start with their failure type (`low_reward_cases`).
_CASE_TYPE = re.compile(r"\[(\w+)\]")


def _from_feedback(ev: AgentEvidence, max_examples: int) -> InduceEvidence:
    case_types = Counter(m.group(1) for c in ev.hard_cases if (m := _CASE_TYPE.match(c)))
    main_type = case_types.most_common(1)[0][0] if case_types else None
    problem = "; ".join(ev.missing_capabilities) or (
        _problem(main_type) if main_type else "the critic's feedback on this agent"
    )
    lines = [f"- {item}" for item in ev.items[: max_examples * 2]]
    if ev.hard_cases:
        lines.append("In low-reward questions:")
        lines += [f"- {case}" for case in ev.hard_cases[: max_examples * 2]]
    return InduceEvidence(
        problem=problem,
        text="\n".join(lines),
        evidence=OperatorEvidence(
            support=ev.support,
            failure_type=main_type,
            question_ids=list(ev.question_ids),
            summary=problem,
        ),
        fallback_name=(ev.missing_capabilities or [main_type or "agent-guidance"])[0],
    )


def asks_for_new_skill(evidence: AgentEvidence, library: SkillLibrary) -> bool:
    """Whether agent-level evidence is a reason to induce: it names a missing capability, or
    the library is empty (nothing to refine) and there is feedback or a low-reward case."""
    if evidence.missing_capabilities:
        return True
    return len(library) == 0 and bool(evidence.items or evidence.hard_cases)


def induce_candidates(
    library: SkillLibrary, aggregation: AggregationResult, ctx: OperatorContext
) -> list[InduceEvidence]:
    """Evidence for new skills of one agent's library, best first."""
    s = ctx.settings
    agent = library.agent
    out = [
        _from_pattern(p, s.max_evidence_examples)
        for p in aggregation.patterns
        if p.agent == agent and p.action == "induce" and p.support >= s.min_induce_support
    ]
    out += [
        _from_feedback(ev, s.max_evidence_examples)
        for ev in aggregation.agent_evidence
        if ev.agent == agent
        and ev.support >= s.min_induce_support
        and asks_for_new_skill(ev, library)
    ]
    return out


async def induce_one(
    library: SkillLibrary, candidate: InduceEvidence, ctx: OperatorContext
) -> tuple[SkillLibrary, OperatorRecord]:
    """Draft, normalise and add one skill; unchanged library (with the reason) on failure."""
    cap = ctx.settings.body_token_cap
    reason = f"induce for '{candidate.problem}': support {candidate.evidence.support} question(s)"

    unchanged = Declined("induce", ctx, library, reason, candidate.evidence)

    shown = [ctx.evidence_text(candidate.problem), ctx.evidence_text(candidate.text)]
    messages: list[BaseMessage] = [
        SystemMessage(prompts.INDUCE_SYSTEM.format(max_words=cap * 3 // 4)),
        HumanMessage(
            prompts.INDUCE_USER.format(
                agent=library.agent,
                context=ctx.context_for(library),
                guidance=ctx.guidance_block(),
                existing=", ".join(library.names()) or "none",
                support=candidate.evidence.support,
                problem=shown[0],
                evidence=shown[1],
            )
        ),
    ]
    capped = await draft_skill(ctx, messages, ctx.settings.induce_max_tokens, "drafted")
    if isinstance(capped, str):
        return unchanged(capped)
    draft, body, truncated = capped.draft, capped.body, capped.truncated
    name = normalise_name(draft.name, candidate.fallback_name, library.names())
    finding = ctx.memorised(
        "induce", library.agent, name, f"{draft.description}\n{body}", shown=shown
    )
    if finding is not None:
        return unchanged(finding.describe(), skills=[name], memorisation=finding)
    metadata = {}
    if AGENT_PATTERN.fullmatch(library.agent):
        metadata[AGENT_KEY] = library.agent
    try:
        skill = (
            Skill.build(
                f"induce iteration {ctx.iteration}",
                name=name,
                description=normalise_description(
                    draft.description, f"Use when facing: {candidate.problem}."
                ),
                body=body,
                metadata=metadata,
            )
            .with_iteration(ctx.iteration)
            .with_provenance(
                provenance_line(
                    "induce",
                    ctx.iteration,
                    candidate.evidence.question_ids,
                    extra=f"failure={candidate.evidence.failure_type or 'feedback'}",
                )
            )
        )
        after = library.add(skill)
    except (GrseError, ValueError) as error:
        return unchanged(f"the drafted skill is invalid: {error}", skills=[name])
    return after, make_record(
        "induce",
        ctx,
        library,
        after,
        skills=[name],
        created=[name],
        reason=reason,
        evidence=candidate.evidence,
        truncated=truncated,
    )


async def induce_in_turn(
    library: SkillLibrary, candidates: Sequence[InduceEvidence], ctx: OperatorContext
) -> LibraryOutput:
    """One induce attempt per candidate in turn, until the library reaches its limit (that
    candidate is recorded as skipped, the rest are not tried)."""
    current = library
    records: list[OperatorRecord] = []
    for candidate in candidates:
        limit = ctx.limit_of(current)
        if limit is not None and len(current) >= limit:
            records.append(
                skip_record(
                    "induce",
                    ctx,
                    current,
                    skills=[],
                    reason=f"induce for '{candidate.problem}'",
                    evidence=candidate.evidence,
                    skipped_reason=f"library is at its limit of {limit} skills",
                )
            )
            break
        current, record = await induce_one(current, candidate, ctx)
        records.append(record)
    return current, records


async def induce(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, ctx: OperatorContext
) -> OperatorOutput:
    """For each agent, up to `max_new_skills_per_agent` induce attempts (best evidence first)
    while the library is under its limit L."""

    async def step(library: SkillLibrary) -> LibraryOutput:
        candidates = induce_candidates(library, aggregation, ctx)
        return await induce_in_turn(
            library, candidates[: ctx.settings.max_new_skills_per_agent], ctx
        )

    return await each_library_async(libraries, step)
