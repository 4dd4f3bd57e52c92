"""Skill evolution of one round (spec §5, §9.3 step 6): LEARN from reusable successes (A+),
CREATE or repair from locally diagnosable failure clusters (A-), the forge's refine and prune,
then the validation pool's promote/hold/disable decisions and the drop flag.

The four operators are `OperatorRule`s run by the shared operator driver
(`grse_graph.methods.operators.driver`), the walk GRSE's and MASkills' operators go through:
targets found once, one action per target in turn on the workspace the previous action left.
What SkillMAS does differently lives in the rules' hooks (`designer.Learn`, `designer.Create`,
`forge.Refine`, `forge.Prune`) and in `EvolutionSettings`; the writing calls use the shared
optimizer request (`operators.ask`) with SkillMAS's temperatures and the shared token caps.

The pool (§5.6, rows 11, 18) promotes a shadow skill at >= 3 verified uses and >= 0.6 success.
Counting is per round by default (the code: uses do not accumulate); `cumulative` adds each
round's uses to the skill's `PoolTally`. With a `disable_after` of m, the m-th failed
evaluation (enough uses, rate below the threshold) disables the skill instead of holding it
again (the code declares `disable` but never emits it). A promoted revised copy disables its
parent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.operators.driver import OperatorRule, run_rules
from grse_graph.skills import Skill

from .designer import Create, Learn
from .forge import Prune, Refine
from .settings import EvolutionSettings
from .skills import ParkedSkill
from .trace import VerifiedTrace
from .work import ActionKind, EvolutionAction, EvolutionWork, PoolDecision, PoolTally, RoundEvidence

DROP_THRESHOLD = 0.02
"""A fall in the success rate larger than this is a drop (the code's value; its comment says
0.05)."""


async def evolve_skills(
    work: EvolutionWork,
    evidence: RoundEvidence,
    provider: ChatModelProvider,
    *,
    require_diagnosis: bool = True,
) -> None:
    """The round's operators in the code's order (its designer, then its forge) on `work`,
    their actions added to `work.actions`."""
    s = EvolutionSettings()
    rules: list[OperatorRule[EvolutionWork, Any, EvolutionAction]] = [
        Learn(evidence, provider, s),
        Create(evidence, provider, s, require_diagnosis),
        Refine(evidence, provider, s),
        Prune(s),
    ]
    _, actions = await run_rules(work, rules)
    work.actions.extend(actions)


def evaluate_shadow(
    agent: str,
    skill: str,
    traces: Sequence[VerifiedTrace],
    min_uses: int = 3,
    min_success_rate: float = 0.6,
    *,
    counting: Literal["round", "cumulative"] = "round",
    tally: PoolTally | None = None,
    disable_after: int | None = None,
) -> tuple[PoolDecision, PoolTally]:
    """Promote, hold or disable one shadow skill on the traces of this round whose used skills
    (of its owner) contain it, added to `tally` when counting is cumulative. Returns the
    decision and the skill's tally after this round."""
    prior = tally or PoolTally()
    using = [t for t in traces if skill in t.used.get(agent, [])]
    now = prior.model_copy(
        update={
            "uses": prior.uses + len(using),
            "successes": prior.successes + sum(t.success for t in using),
        }
    )
    uses, successes = len(using), sum(t.success for t in using)
    if counting == "cumulative":
        uses, successes = now.uses, now.successes
    decision: Literal["promote", "hold", "disable"] = "hold"
    if uses < min_uses:
        reason = f"needs {min_uses - uses} more verified uses"
    elif successes / uses >= min_success_rate:
        decision, reason = "promote", f"success rate {successes / uses:.2f} >= {min_success_rate}"
    else:
        now = now.model_copy(update={"failed_evaluations": now.failed_evaluations + 1})
        reason = f"success rate {successes / uses:.2f} below {min_success_rate}"
        if disable_after is not None and now.failed_evaluations >= disable_after:
            decision, reason = "disable", f"{reason} ({now.failed_evaluations} failed evaluations)"
    return PoolDecision(
        agent=agent,
        skill=skill,
        uses=uses,
        successes=successes,
        decision=decision,
        reason=reason,
        failed_evaluations=now.failed_evaluations,
    ), now


def evaluate_pool(
    work: EvolutionWork,
    traces: Sequence[VerifiedTrace],
    min_uses: int,
    min_success_rate: float,
    counting: Literal["round", "cumulative"] = "round",
    disable_after: int | None = None,
) -> None:
    """Promote, hold or disable every shadow skill on its verified uses; a promoted revised
    copy disables its parent (parked, so a demotion can put it back)."""
    for agent, statuses in work.status.items():
        for name, status in list(statuses.items()):
            ref = f"{agent}/{name}"
            if status != "shadow" or not work.holds(ref) or ref in work.demoted:
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
