"""consolidate: merge each group of redundant skills of an agent into one skill.

Groups are the connected components (size >= 2) of the links the critic reported on credits:
"redundant with" and "conflicts with" (two skills that contradict each other are merged into one
consistent skill), this iteration's and those carried from the iterations since the last
consolidation (`AggregationResult.carried_links`, see `links_since_consolidation`); only skills
present in the library count. One optimizer call per group drafts the merged skill, told which
members conflict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from grse_graph.errors import GrseError
from grse_graph.methods.operators import prompts
from grse_graph.methods.operators.base import (
    Declined,
    OperatorContext,
    OperatorOutput,
    make_record,
)
from grse_graph.methods.operators.draft import draft_skill
from grse_graph.methods.operators.driver import each_target
from grse_graph.methods.operators.schedule import OperatorSchedule
from grse_graph.methods.operators.schema import OperatorEvidence, OperatorRecord
from grse_graph.methods.operators.text import (
    normalise_description,
    normalise_name,
    provenance_line,
)
from grse_graph.methods.plan import AggregationResult, SkillLink
from grse_graph.skills import AGENT_KEY, PARENT_HASH_KEY, Skill, SkillLibrary


def direction_links(aggregation: AggregationResult, iteration: int) -> list[SkillLink]:
    """The redundancy and conflict links of one iteration's directions."""
    links: list[SkillLink] = []
    for d in aggregation.directions:
        pairs = [("redundant", o) for o in d.redundant_with]
        pairs += [("conflicts", o) for o in d.conflicts_with]
        for kind, other in pairs:
            if other != d.skill_id:
                links.append(
                    SkillLink.model_validate(
                        {
                            "agent": d.agent,
                            "skill_id": d.skill_id,
                            "other": other,
                            "kind": kind,
                            "iteration": iteration,
                        }
                    )
                )
    return links


def links_since_consolidation(
    aggregation: AggregationResult,
    iteration: int,
    earlier: Mapping[int, AggregationResult],
    schedule: OperatorSchedule,
) -> AggregationResult:
    """`aggregation` (of `iteration`) carrying the links of the `earlier` iterations' plans
    that came after the last iteration consolidate ran in."""
    last = max((t for t in range(1, iteration) if "consolidate" in schedule.active(t)), default=0)
    carried = [
        link
        for t in sorted(earlier)
        if last < t < iteration
        for link in direction_links(earlier[t], t)
    ]
    return aggregation.model_copy(update={"carried_links": carried})


def _links(library: SkillLibrary, aggregation: AggregationResult) -> list[SkillLink]:
    present = set(library.names())
    return [
        link
        for link in [*aggregation.carried_links, *direction_links(aggregation, 0)]
        if link.agent == library.agent and {link.skill_id, link.other} <= present
    ]


def redundant_groups(library: SkillLibrary, aggregation: AggregationResult) -> list[list[str]]:
    """Connected components of size >= 2 of the redundancy and conflict links, in library
    order."""
    names = library.names()
    edges: dict[str, set[str]] = {n: set() for n in names}
    for link in _links(library, aggregation):
        edges[link.skill_id].add(link.other)
        edges[link.other].add(link.skill_id)
    seen: set[str] = set()
    groups: list[list[str]] = []
    for start in names:
        if start in seen or not edges[start]:
            continue
        component: set[str] = set()
        stack = [start]
        while stack:
            node = stack.pop()
            if node in component:
                continue
            component.add(node)
            stack.extend(edges[node] - component)
        seen |= component
        groups.append([n for n in names if n in component])
    return groups


def _conflicts(library: SkillLibrary, group: Sequence[str], aggregation: AggregationResult) -> str:
    pairs = sorted(
        {
            tuple(sorted((link.skill_id, link.other)))
            for link in _links(library, aggregation)
            if link.kind == "conflicts" and link.skill_id in group and link.other in group
        }
    )
    if not pairs:
        return ""
    listed = ", ".join(f"{a} <-> {b}" for a, b in pairs)
    return f" Conflicting instructions to resolve into one consistent rule: {listed}."


def _evidence(
    library: SkillLibrary, group: list[str], aggregation: AggregationResult
) -> OperatorEvidence:
    directions = [aggregation.direction(library.agent, n) for n in group]
    found = [d for d in directions if d is not None]
    qids: list[str] = []
    for d in found:
        qids += [q for q in d.question_ids if q not in qids]
    utility = sum(d.utility for d in found) / len(found) if found else None
    summary = " | ".join(f"{d.skill_id}: {d.summary}" for d in found)
    return OperatorEvidence(
        verdict="redundant",
        utility=utility,
        n_credits=sum(d.n_credits for d in found),
        question_ids=qids,
        summary=(summary + _conflicts(library, group, aggregation)).strip(),
    )


async def consolidate_group(
    library: SkillLibrary, group: list[str], aggregation: AggregationResult, ctx: OperatorContext
) -> tuple[SkillLibrary, OperatorRecord]:
    """Merge one group; the library is unchanged (with the reason recorded) on failure."""
    evidence = _evidence(library, group, aggregation)
    reason = (
        f"consolidate {', '.join(group)}: reported redundant with (or conflicting with) each other"
    )
    skills = [library.get(n) for n in group]
    cap = ctx.settings.body_token_cap

    unchanged = Declined("consolidate", ctx, library, reason, evidence, skills=group)

    messages: list[BaseMessage] = [
        SystemMessage(prompts.CONSOLIDATE_SYSTEM.format(max_words=cap * 3 // 4)),
        HumanMessage(
            prompts.CONSOLIDATE_USER.format(
                agent=library.agent,
                context=ctx.context_for(library, exclude=group),
                guidance=ctx.guidance_block(),
                skills="\n\n".join(f"## {s.name}: {s.description}\n{s.body}" for s in skills),
                evidence=ctx.evidence_text(
                    evidence.summary or "(the critic marked them redundant)"
                ),
            )
        ),
    ]
    capped = await draft_skill(ctx, messages, ctx.settings.consolidate_max_tokens, "merged")
    if isinstance(capped, str):
        return unchanged(capped)
    draft, body, truncated = capped.draft, capped.body, capped.truncated
    others = [n for n in library.names() if n not in group]
    name = normalise_name(draft.name, group[0], others)
    # What the members already said passed the check when they were written.
    finding = ctx.memorised(
        "consolidate", library.agent, name, body, known=[s.body for s in skills]
    )
    if finding is not None:
        return unchanged(finding.describe(), memorisation=finding)
    first = skills[0]
    metadata = {k: v for k, v in first.metadata.items() if k == AGENT_KEY}
    metadata[PARENT_HASH_KEY] = first.content_hash()
    members = ",".join(f"{s.name}@{s.content_hash()[:12]}" for s in skills)
    try:
        merged = (
            Skill.build(
                f"consolidate iteration {ctx.iteration}",
                name=name,
                description=normalise_description(
                    draft.description, " / ".join(s.description for s in skills)
                ),
                body=body,
                metadata=metadata,
            )
            .with_iteration(ctx.iteration)
            .with_provenance(
                provenance_line(
                    "consolidate", ctx.iteration, evidence.question_ids, extra=f"merged={members}"
                )
            )
        )
        if evidence.utility is not None:
            merged = merged.with_utility(evidence.utility)
        after = library.merge(group, merged)
    except (GrseError, ValueError) as error:
        return unchanged(f"the merged skill is invalid: {error}")
    return after, make_record(
        "consolidate",
        ctx,
        library,
        after,
        skills=group,
        reason=reason,
        evidence=evidence,
        created=[name],
        removed=[n for n in group if n != name],
        truncated=truncated,
    )


async def consolidate(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, ctx: OperatorContext
) -> OperatorOutput:
    """Merge every redundant group of every agent (one optimizer call per group)."""
    return await each_target(
        libraries,
        aggregation,
        ctx,
        redundant_groups,
        consolidate_group,
        # A group that shares a member with one merged before it is gone as a group.
        applicable=lambda current, group: all(current.has(n) for n in group),
    )
