"""The team as SkillMAS training state (spec §6, §9.2 row 19): seed agents plus specialists
added by restructuring, each with a role, task-type targets and a boundary note.

A specialist is an `AgentSpec` of its own (`specialist-<tau>`). Inserted (row 19 A, default),
it runs just before the final agent for questions whose task type is among its targets; it has
no task tools and sees the earlier agents' tool results, so the tool budget stays with the seed
retriever. Routed (row 19 B), it is an alternative executor for one seed agent's `slot`: it
never runs by position; when the router picks it for a question it takes the slot agent's
place with that agent's tools, budget and role, plus its own specialist role and library.

Routing (spec §2.3 `selectAgent`): a slot's candidates are the seed agent plus its routed
specialists, ranked by the code's softmax over Q^a(a, tau) with temperature max(0.01, T).
Training rounds sample from it (seeded per rollout, so a rerun routes the same way); otherwise
the most probable candidate runs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from grse_graph.skills import SkillLibrary
from grse_graph.team.spec import AgentSpec, TeamSpec

from .skills import slug
from .tables import ExecutorUtilityTable
from .trace import ALL_TYPES

BOUNDARY_HEADING = "## SkillMAS boundary"


class TeamMember(BaseModel):
    """One agent of the trained team: a seed agent of the task's team or an added specialist."""

    name: str
    seed: bool
    role: str = Field(default="", description="a specialist's role prompt (seeds: the task's)")
    targets: list[str] = Field(default_factory=list, description="task types it runs for")
    boundary: str = Field(default="", description="boundary note (replaced, never stacked)")
    reason: str = ""
    slot: str | None = Field(
        default=None, description="routed specialist: the seed agent whose place it can take"
    )


def seed_members(team: TeamSpec) -> list[TeamMember]:
    """The task's team as SkillMAS members (all seeds, in order)."""
    return [TeamMember(name=name, seed=True) for name in team.agent_names]


def specialist_name(task_type: str, taken: Sequence[str]) -> str:
    """`specialist-<tau>` (lower-case words joined by hyphens), with -2, -3, ... if taken."""
    name, n = f"specialist-{slug(task_type)}", 2
    while name in taken:
        name, n = f"specialist-{slug(task_type)}-{n}", n + 1
    return name


def specialist_role(task_type: str) -> str:
    """The code's three-sentence specialist prompt, adapted to a QA team."""
    return (
        f"You are the specialist for '{task_type}' questions in this team. You run after the "
        "earlier agents and before the final agent: read the question and their responses, "
        "and hand the final agent a short, checked statement of the evidence and the answer it "
        "supports. Use your assigned skills only when their applicability matches this "
        "question. If something blocks you (missing evidence, conflicting responses), say so "
        "explicitly so the final agent keeps the boundaries clear."
    )


def routed_specialist_role(task_type: str, slot: str) -> str:
    """The specialist prompt for a routed specialist (it does the slot agent's job)."""
    return (
        f"You are the specialist for '{task_type}' questions in this team, taking the place of "
        f"{slot} for the questions routed to you: do {slot}'s job as described below. Use your "
        "assigned skills only when their applicability matches this question. If something "
        "blocks you (missing evidence, conflicting responses), say so explicitly so the next "
        "agent keeps the boundaries clear."
    )


def boundary_note(task_type: str, reasons: Sequence[str]) -> str:
    """The boundary appendix: the agent's primary task region and what to hand on."""
    listed = ", ".join(sorted(set(reasons))) or "retained evidence"
    return (
        f"{BOUNDARY_HEADING}\n\nYour primary task region is '{task_type}' questions "
        f"(evidence: {listed}). Stay inside that region; hand anything outside it on in your "
        "response instead of quietly doing it yourself."
    )


def runs_for(member: TeamMember, task_type: str) -> bool:
    """Seeds always run; an inserted specialist runs for its targets (and always when tau is
    `all`); a routed specialist runs only when the router picks it (`running_members`)."""
    if member.slot is not None:
        return False
    return (
        member.seed or not member.targets or task_type == ALL_TYPES or task_type in member.targets
    )


def running_members(
    members: Sequence[TeamMember], task_type: str, routed: Mapping[str, str] | None = None
) -> list[TeamMember]:
    """The members that run a question of `task_type`, in order; `routed` maps a slot (seed
    agent) to the routed specialist chosen for it, which then runs in the seed's place."""
    by_name = {m.name: m for m in members}
    out = []
    for member in members:
        if not runs_for(member, task_type):
            continue
        chosen = by_name.get((routed or {}).get(member.name, member.name), member)
        out.append(chosen if chosen.slot == member.name else member)
    return out


def insert_before_final(members: Sequence[TeamMember], new: TeamMember) -> list[TeamMember]:
    """The member list with `new` inserted just before the final agent."""
    out = list(members)
    out.insert(max(0, len(out) - 1), new)
    return out


def build_team(
    seed_team: TeamSpec,
    members: Sequence[TeamMember],
    libraries: Mapping[str, SkillLibrary],
    task_type: str,
    role_suffix: str = "",
    routed: Mapping[str, str] | None = None,
) -> TeamSpec:
    """The team that runs one question: the members that run for `task_type` (with the routed
    specialists of `routed` in their slots), in order, each with its (selected) library;
    `role_suffix` is appended to the role of every agent that was given skills (the
    `Skills used:` request)."""
    agents = []
    for member in running_members(members, task_type, routed):
        library = libraries.get(member.name, SkillLibrary.empty(member.name))
        suffix = f"\n\n{role_suffix}" if role_suffix and library.skills else ""
        note = f"\n\n{member.boundary}" if member.boundary else ""
        if member.seed or member.slot is not None:
            spec = seed_team.agent(member.slot or member.name)
            lead = f"{member.role}\n\n" if member.slot is not None else ""
            agents.append(
                spec.model_copy(
                    update={
                        "name": member.name,
                        "role": lead + spec.role + note + suffix,
                        "role_by_kind": {
                            k: lead + v + note + suffix for k, v in spec.role_by_kind.items()
                        },
                        "library": library,
                    }
                )
            )
        else:
            agents.append(
                AgentSpec(
                    name=member.name,
                    role=member.role + note + suffix,
                    tools=(),
                    library=library,
                    skill_mode=seed_team.agents[0].skill_mode,
                    max_tool_calls=0,
                    sees_tool_results=True,
                )
            )
    return seed_team.model_copy(update={"agents": tuple(agents)})


ROUTE_TEMPERATURE = 0.5
MIN_TEMPERATURE = 0.01


def route_probabilities(
    table: ExecutorUtilityTable,
    candidates: Sequence[str],
    task_type: str,
    temperature: float = ROUTE_TEMPERATURE,
) -> list[tuple[str, float]]:
    """softmax(Q^a(a, tau) / T) over the candidates, most probable first (ties keep order)."""
    if len(candidates) == 1:
        return [(candidates[0], 1.0)]
    t = max(MIN_TEMPERATURE, temperature)
    values = [table.value(a, task_type) / t for a in candidates]
    top = max(values)
    weights = [math.exp(v - top) for v in values]
    total = sum(weights)
    pairs = [(a, w / total) for a, w in zip(candidates, weights, strict=True)]
    return sorted(pairs, key=lambda pair: -pair[1])


def route(
    members: Sequence[TeamMember],
    table: ExecutorUtilityTable,
    task_type: str,
    temperature: float = ROUTE_TEMPERATURE,
    rng: random.Random | None = None,
) -> dict[str, str]:
    """slot -> the candidate that runs it, for every slot that has routed specialists: sampled
    with `rng` (training), the most probable one without (validation, test)."""
    chosen: dict[str, str] = {}
    for member in members:
        alternatives = [m.name for m in members if m.slot == member.name]
        if member.slot is not None or not alternatives:
            continue
        ranked = route_probabilities(table, [member.name, *alternatives], task_type, temperature)
        if rng is None:
            chosen[member.name] = ranked[0][0]
            continue
        draw, acc = rng.random(), 0.0
        chosen[member.name] = ranked[-1][0]
        for name, p in ranked:
            acc += p
            if draw < acc:
                chosen[member.name] = name
                break
    return chosen


def routing_slot(
    members: Sequence[TeamMember],
    implicated: Sequence[str],
    table: ExecutorUtilityTable,
    task_type: str,
) -> str:
    """The seed slot a new routed specialist competes for: the implicated seed agent with the
    lowest Q^a(a, tau) (all seeds when none is implicated); ties go to the later agent, as the
    code's stable sort makes the last-listed executor the lowest."""
    seeds = [m.name for m in members if m.seed]
    pool = [a for a in seeds if a in implicated] or seeds
    order = {name: i for i, name in enumerate(seeds)}
    return min(pool, key=lambda a: (table.value(a, task_type), -order[a]))
