"""Which questions a SkillMAS round runs and which team runs each of them (spec §9.2 rows 9, 11,
19 B, 22): the fixed train subset drawn once, and per question the seed agents plus the
specialists targeting its task type (routed specialists take their slot agent's place when the
Q^a softmax picks them), each with its k selected skills and asked to close with a
`Skills used:` line."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from grse_graph.errors import GrseError
from grse_graph.methods.rounds import TeamRequest
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.spec import TeamSpec

from .settings import SkillmasSettings
from .skills import lineage_id, select_skills
from .state import SkillmasState
from .team import build_team, route, running_members
from .trace import SKILLS_USED_LINE, task_type_of

USED_LINE_REQUEST = (
    f"After your response, add one last line `{SKILLS_USED_LINE} <names of the skills above "
    "that you followed, comma-separated, or none>`."
)


def fixed_subset(questions: Sequence[TaskQuestion], size: int, seed: int) -> list[str]:
    """`size` train questions drawn once in proportion to category (largest remainder), in
    split order."""
    if not questions:
        raise GrseError("skillmas: the train split is empty")
    size = min(size, len(questions))
    by_category: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        by_category.setdefault(str(q.category), []).append(i)
    quotas = {c: size * len(ix) / len(questions) for c, ix in by_category.items()}
    counts = {c: int(v) for c, v in quotas.items()}
    for c in sorted(quotas, key=lambda c: -(quotas[c] - counts[c]))[: size - sum(counts.values())]:
        counts[c] += 1
    rng = random.Random(f"skillmas-subset:{seed}")
    chosen = {i for c, ix in sorted(by_category.items()) for i in rng.sample(ix, counts[c])}
    return [q.id for i, q in enumerate(questions) if i in chosen]


def select_libraries(
    state: SkillmasState,
    libraries: Mapping[str, SkillLibrary],
    question: TaskQuestion,
    task_type: str,
    k: int,
    training: bool,
    routed: Mapping[str, str] | None = None,
) -> dict[str, SkillLibrary]:
    """Each running agent's k selected skills (shadow skills offered in training only);
    `routed` names the routed specialists that run in place of their slot agents."""
    out = {}
    for member in running_members(state.members, task_type, routed):
        library = libraries.get(member.name, SkillLibrary.empty(member.name))
        offered = [
            s
            for s in library.skills
            if state.status_of(member.name, s.name) == "active"
            or (training and state.status_of(member.name, s.name) == "shadow")
        ]
        chosen = select_skills(
            offered,
            query=f"{task_type} {question.question}",
            task_type=task_type,
            agent=member.name,
            table=state.skills,
            k=k,
            lineage={s.name: lineage_id(s, library.agent) for s in library.skills},
        )
        names = {c.name for c in chosen}
        out[member.name] = SkillLibrary.build(
            member.name, [s for s in offered if s.name in names], library.limit
        )
    return out


def round_state(state: object) -> SkillmasState:
    """The SkillMAS state a hook was given (`GrseError` if there is none: setup writes one)."""
    if not isinstance(state, SkillmasState):
        raise GrseError(f"skillmas: no SkillMAS state before this round (got {type(state)})")
    return state


def unit_team(request: TeamRequest, settings: SkillmasSettings) -> TeamSpec:
    """The team that runs one unit under the round's state: routed specialists are sampled
    (seeded by the unit's `seed`) in training and the most probable one runs otherwise."""
    state = round_state(request.state)
    question = request.question
    tau = task_type_of(question.category, settings.task_type)
    rng = random.Random(request.seed) if request.training else None
    routed = route(state.members, state.executors, tau, settings.route_temperature, rng)
    selected = select_libraries(
        state, request.libraries, question, tau, settings.k, request.training, routed
    )
    return build_team(request.team, state.members, selected, tau, USED_LINE_REQUEST, routed)
