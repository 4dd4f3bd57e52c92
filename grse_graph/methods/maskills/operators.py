"""MASkills' variants of the shared operators (spec maskills.md §5).

refine is the shared operator unchanged. The others differ from the shared rules only where
MASkills does:

- consolidate: the shared merge; afterwards the merged skill's bookkeeping follows the
  reference (utility = mean of the sources' recorded utilities, invocations = their sum).
- prune (§5.3): a skill is marked when its direction says low_utility OR its aggregated
  utility is at or below the threshold (-0.3); a skill without a direction is marked when it
  was never invoked AND its recorded utility is at or below the threshold. Marked skills are
  removed in library order; if every skill of a library is marked, the last marked one stays.
- induce (§5.4): at most one new skill per agent per iteration, while the library is under
  its limit, when the agent has a residual summary or hard cases; the evidence is the residual
  summary plus the first `max_hard_cases` hard cases.
"""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.methods.operators.base import OperatorContext, OperatorOutput
from grse_graph.methods.operators.consolidate import consolidate
from grse_graph.methods.operators.driver import LibraryOutput, each_library, each_library_async
from grse_graph.methods.operators.induce import InduceEvidence, induce_in_turn
from grse_graph.methods.operators.prune import direction_evidence, remove_candidates
from grse_graph.methods.operators.schema import OperatorEvidence
from grse_graph.methods.plan import AgentEvidence, AggregationResult
from grse_graph.skills import SkillLibrary

GENERIC_PROBLEM = "low-reward trajectories"


def prune_marks(
    library: SkillLibrary, aggregation: AggregationResult, threshold: float
) -> list[tuple[str, OperatorEvidence]]:
    """MASkills' prune marks of one library, in library order, with the evidence of each."""
    marks: list[tuple[str, OperatorEvidence]] = []
    for skill in library.skills:
        direction = aggregation.direction(library.agent, skill.name)
        if direction is not None:
            if direction.verdict == "low_utility" or direction.utility <= threshold:
                marks.append((skill.name, direction_evidence(direction)))
            continue
        utility = skill.utility if skill.utility is not None else 0.0
        if skill.invocations == 0 and utility <= threshold:
            marks.append(
                (
                    skill.name,
                    OperatorEvidence(
                        verdict="low_utility",
                        utility=utility,
                        summary=(
                            f"no credit this iteration, never invoked, recorded utility "
                            f"{utility:+.2f} <= {threshold:+.2f}"
                        ),
                    ),
                )
            )
    return marks


async def prune(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, ctx: OperatorContext
) -> OperatorOutput:
    """Remove every marked skill; a library whose skills are all marked keeps the last one."""

    def step(library: SkillLibrary) -> LibraryOutput:
        marks = prune_marks(library, aggregation, ctx.settings.prune_utility_threshold)
        return remove_candidates(library, marks, ctx)

    return each_library(libraries, step)


async def consolidate_with_stats(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, ctx: OperatorContext
) -> OperatorOutput:
    """The shared consolidate, then the reference's bookkeeping for each merged skill."""
    out, records = await consolidate(libraries, aggregation, ctx)
    for record in records:
        if not record.changed or not record.created:
            continue
        before = libraries[record.agent]
        sources = [before.get(n) for n in record.skills if before.has(n)]
        library = out[record.agent]
        for name in record.created:
            if not library.has(name) or not sources:
                continue
            utilities = [s.utility if s.utility is not None else 0.0 for s in sources]
            merged = (
                library.get(name)
                .with_utility(round(sum(utilities) / len(utilities), 4))
                .with_invocations(sum(s.invocations for s in sources))
            )
            library = library.replace(merged)
        out[record.agent] = library
    return out, records


def induce_evidence(evidence: AgentEvidence, max_hard_cases: int) -> InduceEvidence | None:
    """The induce prompt's evidence for one agent, or None when it has none."""
    summary = " | ".join(i for i in evidence.items if i.strip())
    cases = evidence.hard_cases[:max_hard_cases]
    if not summary and not cases:
        return None
    lines = []
    if summary:
        lines.append(f"Residual pattern: {summary}")
    if cases:
        lines.append("Hard cases:")
        lines += [f"- {c}" for c in cases]
    return InduceEvidence(
        problem=summary or GENERIC_PROBLEM,
        text="\n".join(lines),
        evidence=OperatorEvidence(
            support=evidence.support,
            question_ids=list(evidence.question_ids),
            summary=summary or f"{len(evidence.hard_cases)} hard case(s)",
        ),
        fallback_name=(
            evidence.missing_capabilities[0] if evidence.missing_capabilities else "team-guidance"
        ),
    )


class Induce:
    """MASkills' induce: one attempt per agent with evidence, while under the limit (none when
    `max_new_skills_per_agent` is 0)."""

    def __init__(self, max_hard_cases: int) -> None:
        self.max_hard_cases = max_hard_cases

    async def __call__(
        self,
        libraries: Mapping[str, SkillLibrary],
        aggregation: AggregationResult,
        ctx: OperatorContext,
    ) -> OperatorOutput:
        if ctx.settings.max_new_skills_per_agent < 1:
            return dict(libraries), []

        async def step(library: SkillLibrary) -> LibraryOutput:
            candidates = [
                candidate
                for evidence in aggregation.agent_evidence
                if evidence.agent == library.agent
                and (candidate := induce_evidence(evidence, self.max_hard_cases)) is not None
            ]
            return await induce_in_turn(library, candidates, ctx)

        return await each_library_async(libraries, step)
