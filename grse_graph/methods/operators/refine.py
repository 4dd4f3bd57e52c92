"""refine: the optimizer proposes anchored edits to one skill body; they are applied
deterministically (`apply_anchored_edits`) and every skipped edit is recorded with its reason.

The optimizer is asked to keep the skill a general procedure and sees the failure pattern across
questions with question-specific names and numbers masked. The text the applied edits add must
pass the memorisation check (`memorisation.py`); otherwise the refinement is not applied and
the record carries the finding. The rest of the body is not re-checked: it passed when written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from grse_graph.errors import GrseError
from grse_graph.methods.operators import prompts
from grse_graph.methods.operators.anchored import apply_anchored_edits
from grse_graph.methods.operators.ask import ask_optimizer, unusable
from grse_graph.methods.operators.base import (
    OperatorContext,
    OperatorOutput,
    make_record,
    skip_record,
)
from grse_graph.methods.operators.driver import each_target
from grse_graph.methods.operators.schema import OperatorEvidence, OperatorRecord, RefineEdits
from grse_graph.methods.operators.text import diagnosis_example_lines, provenance_line
from grse_graph.methods.plan import AggregationResult, EditDirection, InductionPattern
from grse_graph.skills import SkillLibrary


def refine_targets(library: SkillLibrary, aggregation: AggregationResult) -> list[str]:
    """Skills of this library with a refine direction or a refine diagnosis pattern."""
    wanted: set[str] = set()
    for d in aggregation.directions:
        if d.agent == library.agent and d.verdict == "refine":
            wanted.add(d.skill_id)
    for p in aggregation.patterns:
        if p.agent == library.agent and p.action == "refine" and p.skill_id is not None:
            wanted.add(p.skill_id)
    return [name for name in library.names() if name in wanted]


def render_refine_evidence(
    direction: EditDirection | None, patterns: Sequence[InductionPattern], max_examples: int
) -> str:
    """The evidence block of the refine prompt: the edit direction, then diagnosis examples."""
    lines: list[str] = []
    if direction is not None:
        lines.append(
            f"Critiques ({direction.n_credits}, utility {direction.utility:+.2f}, "
            f"verdict {direction.verdict}): {direction.summary}"
        )
        if direction.suggested_edit:
            lines.append(f"Suggested edit: {direction.suggested_edit}")
        for category, items in direction.evidence_by_category.items():
            lines.append(f"Category {category}: " + " | ".join(items))
    for p in patterns:
        lines.append(f"Failures ({p.failure_type}, {p.support} question(s)):")
        lines += diagnosis_example_lines(p, max_examples)
    return "\n".join(lines) or "(no evidence)"


def _evidence(
    direction: EditDirection | None, patterns: Sequence[InductionPattern]
) -> OperatorEvidence:
    qids = list(direction.question_ids) if direction is not None else []
    for p in patterns:
        qids += [q for q in p.question_ids if q not in qids]
    return OperatorEvidence(
        verdict=direction.verdict if direction is not None else None,
        utility=direction.utility if direction is not None else None,
        n_credits=direction.n_credits if direction is not None else 0,
        support=max((p.support for p in patterns), default=0),
        failure_type=patterns[0].failure_type if patterns else None,
        question_ids=qids,
        summary=direction.summary if direction is not None else "",
    )


async def refine_skill(
    library: SkillLibrary,
    name: str,
    aggregation: AggregationResult,
    ctx: OperatorContext,
) -> tuple[SkillLibrary, OperatorRecord]:
    """Refine one skill; the library is unchanged when no edit applies or the call fails."""
    skill = library.get(name)
    direction = aggregation.direction(library.agent, name)
    patterns = [
        p
        for p in aggregation.patterns
        if p.agent == library.agent and p.skill_id == name and p.action == "refine"
    ]
    evidence = _evidence(direction, patterns)
    reason = (
        f"refine '{name}': verdict {evidence.verdict or '-'}, utility "
        f"{evidence.utility if evidence.utility is not None else '-'}, "
        f"{evidence.n_credits} credit(s), refine-diagnosis support {evidence.support}"
    )
    messages: list[BaseMessage] = [
        SystemMessage(prompts.REFINE_SYSTEM),
        HumanMessage(
            prompts.REFINE_USER.format(
                agent=library.agent,
                context=ctx.context_for(library, exclude=[name]),
                guidance=ctx.guidance_block(),
                name=name,
                description=skill.description,
                body=skill.body,
                evidence=ctx.evidence_text(
                    render_refine_evidence(direction, patterns, ctx.settings.max_evidence_examples)
                ),
            )
        ),
    ]
    proposal = await ask_optimizer(
        ctx.provider, RefineEdits, messages, max_tokens=ctx.settings.refine_max_tokens
    )
    if isinstance(proposal, GrseError):
        return library, skip_record(
            "refine",
            ctx,
            library,
            skills=[name],
            reason=reason,
            evidence=evidence,
            skipped_reason=unusable(proposal),
        )
    new_body, applied, skipped = apply_anchored_edits(skill.body, proposal.edits)
    skipped_reason: str | None = None
    after = library
    added = "\n".join(e.text for e in applied if e.op != "delete")
    finding = (
        ctx.memorised("refine", library.agent, name, added, known=[skill.body])
        if added.strip()
        else None
    )
    # The token counter may ask the server (blocking HTTP): off the event loop.
    tokens = await asyncio.to_thread(ctx.count_tokens, new_body.strip()) if applied else 0
    if not applied:
        skipped_reason = "no edit could be applied"
    elif finding is not None:
        skipped_reason = f"{finding.describe()}; refinement not applied"
    elif tokens > ctx.settings.body_token_cap:
        skipped_reason = (
            f"refined body is {tokens} tokens, over the cap of "
            f"{ctx.settings.body_token_cap}; refinement not applied"
        )
    elif not new_body.strip():
        skipped_reason = "the edits would leave an empty body; refinement not applied"
    else:
        try:
            refined = (
                skill.derive(body=new_body)
                .with_iteration(ctx.iteration)
                .with_provenance(provenance_line("refine", ctx.iteration, evidence.question_ids))
            )
            after = library.replace(refined)
        except (GrseError, ValueError) as error:
            skipped_reason = f"refined skill is invalid: {error}"
    return after, make_record(
        "refine",
        ctx,
        library,
        after,
        skills=[name],
        reason=reason,
        evidence=evidence,
        applied_edits=applied if skipped_reason is None else [],
        skipped_edits=skipped,
        skipped_reason=skipped_reason,
        memorisation=finding,
    )


async def refine(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, ctx: OperatorContext
) -> OperatorOutput:
    """Refine every targeted skill of every agent (agents and skills in library order)."""
    return await each_target(libraries, aggregation, ctx, refine_targets, refine_skill)
