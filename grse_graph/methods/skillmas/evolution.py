"""Skill evolution of one round (spec §5, §9.3 step 6): LEARN from reusable successes (A+),
CREATE or repair from locally diagnosable failure clusters (A-), the forge's refine and prune,
then the validation pool's promote/hold/disable decisions and the drop flag.

The four operators are `OperatorRule`s run by the shared operator driver
(`grse_graph.methods.operators.driver`), the walk GRSE's and MASkills' operators go through:
targets found once, one action per target in turn on the workspace the previous action left.
What SkillMAS does differently lives in the rules' hooks (`designer.Learn`, `designer.Create`,
`forge.Refine`, `forge.Prune`) and in `EvolutionSettings`; the writing calls use the shared
optimizer request (`operators.ask`) with SkillMAS's temperatures and the shared token caps.

Every new or heavily revised skill enters as a shadow skill (the pool); a revised copy's parent
is disabled when the copy is promoted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.operators.driver import OperatorRule, run_local, run_rule, run_rules
from grse_graph.skills import Skill, SkillLibrary

from .designer import Create, Learn
from .evolution_settings import EvolutionSettings
from .forge import Prune, Refine
from .pool import Counting, evaluate_shadow
from .skills import ParkedSkill
from .trace import VerifiedTrace
from .work import ActionKind, EvolutionAction, EvolutionWork, RoundEvidence

EVOLUTION_ORDER = ("learn", "create", "refine", "prune")
"""The order a round runs the operators in (the code's designer, then its forge)."""
DROP_THRESHOLD = 0.02
"""A fall in the success rate larger than this is a drop (the code's value; its comment says
0.05)."""

EvolutionRule = OperatorRule[EvolutionWork, Any, EvolutionAction]
"""A SkillMAS operator (each has its own target type: a task type, a skill)."""


def evolution_rules(
    evidence: RoundEvidence,
    provider: ChatModelProvider,
    *,
    require_diagnosis: bool = True,
    settings: EvolutionSettings | None = None,
) -> dict[str, EvolutionRule]:
    """SkillMAS's operators for one round by name, in `EVOLUTION_ORDER`."""
    s = settings or EvolutionSettings()
    rules: dict[str, EvolutionRule] = {
        "learn": Learn(evidence, provider, s),
        "create": Create(evidence, provider, s, require_diagnosis),
        "refine": Refine(evidence, provider, s),
        "prune": Prune(s),
    }
    return {name: rules[name] for name in EVOLUTION_ORDER}


async def evolve_skills(
    work: EvolutionWork,
    evidence: RoundEvidence,
    provider: ChatModelProvider,
    *,
    require_diagnosis: bool = True,
    settings: EvolutionSettings | None = None,
) -> None:
    """The round's operators in order on `work`, their actions added to `work.actions`."""
    rules = evolution_rules(
        evidence, provider, require_diagnosis=require_diagnosis, settings=settings
    )
    _, actions = await run_rules(work, rules.values())
    work.actions.extend(actions)


async def _run(work: EvolutionWork, rule: EvolutionRule) -> None:
    _, actions = await run_rule(work, rule)
    work.actions.extend(actions)


async def learn(work: EvolutionWork, ev: RoundEvidence, provider: ChatModelProvider) -> None:
    """LEARN alone (see `designer.Learn`)."""
    await _run(work, Learn(ev, provider, EvolutionSettings()))


async def create(
    work: EvolutionWork,
    ev: RoundEvidence,
    provider: ChatModelProvider,
    require_diagnosis: bool = True,
) -> None:
    """CREATE alone (see `designer.Create`)."""
    await _run(work, Create(ev, provider, EvolutionSettings(), require_diagnosis))


async def refine(work: EvolutionWork, ev: RoundEvidence, provider: ChatModelProvider) -> None:
    """The forge's refine alone (see `forge.Refine`)."""
    await _run(work, Refine(ev, provider, EvolutionSettings()))


def prune(work: EvolutionWork) -> None:
    """The forge's prune alone (see `forge.Prune`); it calls no model."""
    _, actions = run_local(work, Prune(EvolutionSettings()))
    work.actions.extend(actions)


def evaluate_pool(
    work: EvolutionWork,
    traces: Sequence[VerifiedTrace],
    min_uses: int,
    min_success_rate: float,
    counting: Counting = "round",
    disable_after: int | None = None,
) -> None:
    """Promote, hold or disable every shadow skill on its verified uses (this round's, or all
    rounds' with cumulative counting); a promoted revised copy disables its parent (parked, so
    a demotion can put it back)."""
    for agent, statuses in work.status.items():
        for name, status in list(statuses.items()):
            if status != "shadow" or not work.libraries.get(agent, SkillLibrary.empty(agent)).has(
                name
            ):
                continue
            ref = f"{agent}/{name}"
            if ref in work.demoted:
                continue
            decision, tally = evaluate_shadow(
                agent,
                name,
                traces,
                min_uses,
                min_success_rate,
                counting=counting,
                tally=work.tallies.get(ref),
                disable_after=disable_after,
            )
            work.pool.append(decision)
            work.tallies[ref] = tally
            if decision.decision == "disable":
                _retire(work, agent, name, "disable", decision.reason)
                work.parents.pop(ref, None)
            elif decision.decision == "promote":
                statuses[name] = "active"
                work.tallies.pop(ref, None)
                work.promoted.append(ref)
                work.actions.append(
                    EvolutionAction(kind="promote", agent=agent, skill=name, detail=decision.reason)
                )
                parent = work.parents.pop(ref, None)
                if parent:
                    p_agent, _, p_name = parent.partition("/")
                    removed = _retire(
                        work, p_agent, p_name, "prune", f"replaced by promoted {name}"
                    )
                    if removed is not None:
                        work.parked.append(ParkedSkill.of(p_agent, removed, replaced_by=ref))


def _retire(
    work: EvolutionWork, agent: str, name: str, kind: ActionKind, detail: str
) -> Skill | None:
    skill = work.disable(agent, name)
    if skill is not None:
        work.actions.append(EvolutionAction(kind=kind, agent=agent, skill=name, detail=detail))
    return skill


def drop_observed(previous: float | None, current: float) -> float | None:
    """The drop magnitude when the success rate fell by more than 0.02 (flag only)."""
    if previous is None:
        return None
    drop = previous - current
    return drop if drop > DROP_THRESHOLD else None
