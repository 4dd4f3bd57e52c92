"""consolidate: merge each group of redundant skills of an agent into one skill.

Groups are the connected components (size >= 2) of the "redundant with" relation the critic
reported on credits (only skills present in the library count). One optimizer call per group
drafts the merged skill; the library replaces the group by it. The merged skill records the first
member's content hash as its parent and names every member in its provenance.
"""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from grse_graph.errors import GrseError
from grse_graph.llm.structured import astructured_call
from grse_graph.methods.grse.schema import (
    AggregationResult,
    OperatorEvidence,
    OperatorRecord,
    SkillDraft,
)
from grse_graph.methods.operators import prompts
from grse_graph.methods.operators.base import (
    OperatorContext,
    OperatorOutput,
    make_record,
    skip_record,
)
from grse_graph.methods.operators.text import (
    cap_body,
    normalise_description,
    normalise_name,
    provenance_line,
)
from grse_graph.skills import AGENT_KEY, PARENT_HASH_KEY, Skill, SkillLibrary


def redundant_groups(library: SkillLibrary, aggregation: AggregationResult) -> list[list[str]]:
    """Connected components of size >= 2 of the redundancy relation, in library order."""
    names = library.names()
    present = set(names)
    edges: dict[str, set[str]] = {n: set() for n in names}
    for d in aggregation.directions:
        if d.agent != library.agent or d.skill_id not in present:
            continue
        for other in d.redundant_with:
            if other in present and other != d.skill_id:
                edges[d.skill_id].add(other)
                edges[other].add(d.skill_id)
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


def _evidence(
    library: SkillLibrary, group: list[str], aggregation: AggregationResult
) -> OperatorEvidence:
    directions = [aggregation.direction(library.agent, n) for n in group]
    found = [d for d in directions if d is not None]
    qids: list[str] = []
    for d in found:
        qids += [q for q in d.question_ids if q not in qids]
    utility = sum(d.utility for d in found) / len(found) if found else None
    return OperatorEvidence(
        verdict="redundant",
        utility=utility,
        n_credits=sum(d.n_credits for d in found),
        question_ids=qids,
        summary=" | ".join(f"{d.skill_id}: {d.summary}" for d in found),
    )


async def consolidate_group(
    library: SkillLibrary, group: list[str], aggregation: AggregationResult, ctx: OperatorContext
) -> tuple[SkillLibrary, OperatorRecord]:
    """Merge one group; the library is unchanged (with the reason recorded) on failure."""
    evidence = _evidence(library, group, aggregation)
    reason = f"consolidate {', '.join(group)}: reported redundant with each other"
    skills = [library.get(n) for n in group]
    cap = ctx.settings.body_token_cap

    def unchanged(why: str) -> tuple[SkillLibrary, OperatorRecord]:
        return library, skip_record(
            "consolidate",
            ctx,
            library,
            skills=group,
            reason=reason,
            evidence=evidence,
            skipped_reason=why,
        )

    messages: list[BaseMessage] = [
        SystemMessage(prompts.CONSOLIDATE_SYSTEM.format(max_words=cap * 3 // 4)),
        HumanMessage(
            prompts.CONSOLIDATE_USER.format(
                agent=library.agent,
                skills="\n\n".join(f"## {s.name}: {s.description}\n{s.body}" for s in skills),
                evidence=evidence.summary or "(the critic marked them redundant)",
            )
        ),
    ]
    model = ctx.provider.chat("optimizer", max_tokens=ctx.settings.consolidate_max_tokens)
    try:
        draft = await astructured_call(model, SkillDraft, messages)
    except GrseError as error:
        return unchanged(f"optimizer output unusable: {error}")
    body, truncated = cap_body(draft.body, cap)
    if not body:
        return unchanged("the merged skill has an empty body")
    others = [n for n in library.names() if n not in group]
    name = normalise_name(draft.name, group[0], others)
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
    out = dict(libraries)
    records: list[OperatorRecord] = []
    for agent, library in libraries.items():
        current = library
        for group in redundant_groups(library, aggregation):
            if not all(current.has(n) for n in group):
                continue
            current, record = await consolidate_group(current, group, aggregation, ctx)
            records.append(record)
        out[agent] = current
    return out, records
