"""prune: remove low-utility skills, never emptying a library.

A skill is a prune candidate when this iteration's direction says low_utility, or when it has
no direction this iteration and its recorded utility is at or below the threshold (so evidence
from iterations without prune in the schedule is not lost). Candidates are removed worst first;
the last skill of a library is always kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.methods.operators.base import (
    OperatorContext,
    OperatorOutput,
    make_record,
    skip_record,
)
from grse_graph.methods.operators.driver import LibraryOutput, each_library
from grse_graph.methods.operators.schema import OperatorEvidence, OperatorRecord
from grse_graph.methods.plan import AggregationResult, EditDirection
from grse_graph.skills import SkillLibrary


def direction_evidence(direction: EditDirection) -> OperatorEvidence:
    """The evidence a prune names when this iteration's direction marks the skill."""
    return OperatorEvidence(
        verdict=direction.verdict,
        utility=direction.utility,
        n_credits=direction.n_credits,
        question_ids=list(direction.question_ids),
        summary=direction.summary,
    )


def prune_candidates(
    library: SkillLibrary, aggregation: AggregationResult, threshold: float
) -> list[tuple[str, OperatorEvidence]]:
    """(skill, evidence) pairs to remove, lowest utility first, then by name."""
    found: list[tuple[float, str, OperatorEvidence]] = []
    for skill in library.skills:
        direction = aggregation.direction(library.agent, skill.name)
        if direction is not None:
            if direction.verdict != "low_utility":
                continue
            found.append((direction.utility, skill.name, direction_evidence(direction)))
        elif skill.utility is not None and skill.utility <= threshold:
            evidence = OperatorEvidence(
                verdict="low_utility",
                utility=skill.utility,
                summary=f"recorded utility {skill.utility:+.2f} <= {threshold:+.2f}",
            )
            found.append((skill.utility, skill.name, evidence))
    found.sort(key=lambda item: (item[0], item[1]))
    return [(name, evidence) for _, name, evidence in found]


def remove_candidates(
    library: SkillLibrary, candidates: Sequence[tuple[str, OperatorEvidence]], ctx: OperatorContext
) -> tuple[SkillLibrary, list[OperatorRecord]]:
    """Remove `candidates` from one library in the given order, keeping its last skill (the
    candidate reached when one skill is left is recorded as skipped)."""
    current = library
    records: list[OperatorRecord] = []
    for name, evidence in candidates:
        reason = (
            f"prune '{name}': verdict {evidence.verdict}, utility {evidence.utility:+.2f}"
            if evidence.utility is not None
            else f"prune '{name}'"
        )
        if len(current) <= 1:
            records.append(
                skip_record(
                    "prune",
                    ctx,
                    current,
                    skills=[name],
                    reason=reason,
                    evidence=evidence,
                    skipped_reason="never empty a library: last skill kept",
                )
            )
            continue
        after = current.remove(name)
        records.append(
            make_record(
                "prune",
                ctx,
                current,
                after,
                skills=[name],
                removed=[name],
                reason=reason,
                evidence=evidence,
            )
        )
        current = after
    return current, records


def prune(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, ctx: OperatorContext
) -> OperatorOutput:
    """Remove every prune candidate of every agent, keeping at least one skill per library."""

    def step(library: SkillLibrary) -> LibraryOutput:
        threshold = ctx.settings.prune_utility_threshold
        return remove_candidates(library, prune_candidates(library, aggregation, threshold), ctx)

    return each_library(libraries, step)
