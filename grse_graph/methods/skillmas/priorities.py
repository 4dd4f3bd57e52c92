"""Which task types LEARN and CREATE act on this round, by the code's priorities (spec §5.2
`computeLearnPriority`, §5.3 `computeCreationPriority`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.skills import SkillLibrary

from .evolution_settings import EvolutionSettings
from .skills import ORIGIN_KEY, TASK_KEY, lineage_id
from .tables import SkillUtilityTable
from .trace import VerifiedTrace


def success_rate(traces: Sequence[VerifiedTrace]) -> float:
    return sum(t.success for t in traces) / len(traces) if traces else 0.0


def _by_type(traces: Sequence[VerifiedTrace]) -> dict[str, list[VerifiedTrace]]:
    out: dict[str, list[VerifiedTrace]] = {}
    for t in traces:
        out.setdefault(t.task_type, []).append(t)
    return out


def type_skills(
    libraries: Mapping[str, SkillLibrary], tau: str, origin: str | None = None
) -> list[str]:
    """Lineage ids of the skills written for task type `tau` (of one origin, if given)."""
    return [
        lineage_id(s, agent)
        for agent, library in libraries.items()
        for s in library.skills
        if s.metadata.get(TASK_KEY) == tau
        and (origin is None or s.metadata.get(ORIGIN_KEY) == origin)
    ]


def _top(scored: list[tuple[str, float]], limit: int) -> list[str]:
    scored.sort(key=lambda p: -p[1])
    return [tau for tau, _ in scored[:limit]]


def learn_priorities(
    libraries: Mapping[str, SkillLibrary],
    table: SkillUtilityTable,
    traces: Sequence[VerifiedTrace],
    settings: EvolutionSettings,
) -> list[str]:
    """Task types to LEARN for, best first: a large enough share with both a success and a
    failure; while no learned skill of the type is good, 100 + 50 share + 30 rate, else for a
    proven but not yet good rate 70 + 30 rate."""
    s = settings
    out = []
    for tau, items in _by_type(traces).items():
        share, rate = len(items) / len(traces), success_rate(items)
        if share < s.min_share or rate in (0.0, 1.0):
            continue
        learned = type_skills(libraries, tau, "trajectory-learning")
        best = max((table.global_q(i) for i in learned), default=0.0)
        if best < s.learned_good_q:
            out.append((tau, 100 + 50 * share + 30 * rate))
        elif s.proven_rate <= rate < s.target_rate:
            out.append((tau, 70 + 30 * rate))
    return _top(out, s.max_learn)


def create_priorities(
    libraries: Mapping[str, SkillLibrary],
    table: SkillUtilityTable,
    traces: Sequence[VerifiedTrace],
    settings: EvolutionSettings,
) -> list[str]:
    """Task types to CREATE for, best first, by the code's three cases: no good skill of the
    type; a weak link (rate well under the overall one); widely spread skill utilities."""
    s = settings
    overall = success_rate(traces)
    out = []
    for tau, items in _by_type(traces).items():
        failures = sum(not t.success for t in items)
        if failures / len(traces) < s.min_share:
            continue
        rate = success_rate(items)
        ids = type_skills(libraries, tau)
        qs = [table.global_q(i) for i in ids if table.count(i) >= s.relevant_from]
        best = max(qs, default=0.0)
        mean = sum(qs) / len(qs) if qs else 0.0
        # The code treats fewer than two values as maximally spread.
        variance = sum((q - mean) ** 2 for q in qs) / len(qs) if len(qs) >= 2 else 1.0
        if best < s.good_skill_q:
            out.append((tau, 100 + 100 * failures / len(traces) + 50 * (1 - best)))
        elif rate < s.target_rate and rate < overall - s.weak_link_delta:
            out.append((tau, 80 + 100 * (overall - rate)))
        elif variance > s.variance_trigger and rate < s.target_rate and len(qs) >= 2:
            out.append((tau, 60 + 100 * variance))
    return _top(out, s.max_create)
