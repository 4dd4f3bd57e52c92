"""Probe credit: measured skill effects enter a method's plan beside the critic's credit.

Method-neutral: it reads and returns the shared plan contract (`AggregationResult`), so every
method on the shared loop can take it (`TrainConfig.probe`). The rules, per probed skill:

- reliably harmful (the whole interval below 0): the skill's direction becomes `low_utility`
  with the measured effect as its utility, a prune target even where the critic said nothing
  (and a refine target where prune is not scheduled, through its negative recorded utility);
- reliably helpful: a critic direction that would prune it (`low_utility`, `redundant`)
  becomes `keep`; a silent critic gets a `keep` direction with the measured effect; a critic
  `refine` with a negative utility stays a refine with the measured (positive) utility;
- no measurable effect: the critic's direction stands.

A critic direction whose sign is the opposite of a reliable effect is a contradiction: it is
recorded (`ProbeEvidence.contradicts`) and the measurement decides.
"""

from __future__ import annotations

from typing import Literal

from grse_graph.methods.plan import AggregationResult, EditDirection, ProbeEvidence

from .runner import ProbeResult

DecidedBy = Literal["probe", "critic", "none"]
_PRUNING_VERDICTS = frozenset({"low_utility", "redundant"})


def _measured(effect: float, low: float, high: float, questions: int) -> str:
    return f"measured effect {effect:+.3f} [{low:+.3f}, {high:+.3f}] over {questions} questions"


def _clip(value: float) -> float:
    return max(-1.0, min(1.0, value))


def apply_probe_credit(aggregation: AggregationResult, probe: ProbeResult) -> AggregationResult:
    """The plan with every probed skill's measured effect applied (see the module docstring)."""
    directions = {(d.agent, d.skill_id): d for d in aggregation.directions}
    evidence: list[ProbeEvidence] = []
    for effect in probe.effects:
        key = (effect.agent, effect.skill)
        critic = directions.get(key)
        decided_by: DecidedBy = "critic" if critic is not None else "none"
        contradicts = False
        if effect.effect is not None and effect.low is not None and effect.high is not None:
            measured = _measured(effect.effect, effect.low, effect.high, effect.questions)
            if effect.verdict == "hurts":
                contradicts = critic is not None and critic.utility > 0
                directions[key] = _direction(
                    critic, effect.agent, effect.skill, probe, measured
                ).model_copy(update={"verdict": "low_utility", "utility": _clip(effect.effect)})
                decided_by = "probe"
            elif effect.verdict == "helps":
                contradicts = critic is not None and (
                    critic.utility < 0 or critic.verdict in _PRUNING_VERDICTS
                )
                if critic is None or critic.verdict in _PRUNING_VERDICTS:
                    base = _direction(critic, effect.agent, effect.skill, probe, measured)
                    utility = (
                        effect.effect if critic is None else max(critic.utility, effect.effect)
                    )
                    directions[key] = base.model_copy(
                        update={"verdict": "keep", "utility": _clip(utility)}
                    )
                    decided_by = "probe"
                elif critic.utility < 0:
                    # A refine stays a refine, but a measured help must not leave the skill a
                    # prune candidate through its recorded utility in a later iteration.
                    directions[key] = _direction(
                        critic, effect.agent, effect.skill, probe, measured
                    ).model_copy(update={"utility": _clip(effect.effect)})
                    decided_by = "probe"
        # The measurement enters the evidence as the probe reported it, field for field.
        measurement = {"agent", "effect", "low", "high", "questions", "verdict"}
        evidence.append(
            ProbeEvidence(
                **effect.model_dump(include=measurement),
                skill_id=effect.skill,
                critic_utility=critic.utility if critic is not None else None,
                critic_verdict=critic.verdict if critic is not None else None,
                contradicts=contradicts,
                decided_by=decided_by,
            )
        )
    return aggregation.model_copy(
        update={"directions": list(directions.values()), "probe_evidence": evidence}
    )


def _direction(
    critic: EditDirection | None, agent: str, skill: str, probe: ProbeResult, measured: str
) -> EditDirection:
    """The critic's direction with the measurement appended to its summary, or a new one."""
    if critic is not None:
        return critic.model_copy(update={"summary": f"{critic.summary} ({measured})"})
    return EditDirection(
        agent=agent,
        skill_id=skill,
        summary=f"The critic did not credit this skill; {measured}.",
        utility=0.0,
        verdict="keep",
        question_ids=list(probe.questions),
    )
