"""What training did to a planted library (the paper's repair study, §5.3, Tables 4-5).

For every planted skill: its kind (from the planted library's description, which neither the
critic nor the optimizer sees), the critic's first-update credit u1, the probe's measured effect
when probe credit was on, which signal decided the skill's direction, and its fate: kept,
refined, pruned or merged, with the iteration whose gate accepted the change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from grse_graph.methods.plan import AggregationResult
from grse_graph.tasks.planted import PlantedKind, PlantedLibrary

from .records import GateRecord, OperatorLine
from .run_folder import RunFolder

Fate = Literal["kept", "refined", "pruned", "merged"]

_REMOVING_OPERATORS: dict[str, Fate] = {"prune": "pruned", "consolidate": "merged"}


class PlantedSkillOutcome(BaseModel):
    """One planted skill's credit and fate in a training run."""

    agent: str
    skill: str
    kind: PlantedKind
    # The critic's aggregated utility and verdict in the first plan (None: no credit).
    u1: float | None = None
    critic_verdict: str | None = None
    probe_effect: float | None = None
    probe_low: float | None = None
    probe_high: float | None = None
    probe_verdict: str | None = None
    probe_confidence: float | None = None
    """The level of the probe's interval (None: not probed)."""
    decided_by: str | None = None
    fate: Fate = "kept"
    fate_iteration: int | None = None

    @property
    def sign_correct(self) -> bool | None:
        """Whether u1 has the sign of the kind (None without a credit, at u1 = 0, or for an
        irrelevant skill, which has no right sign: Table 5 counts helpful and harmful ones)."""
        if self.u1 is None or self.u1 == 0 or self.kind == "irrelevant":
            return None
        return (self.u1 > 0) == (self.kind == "helpful")

    @property
    def repaired(self) -> bool:
        """Harmful or irrelevant (the perturbation) and removed or rewritten, or helpful and
        kept (refined counts as kept)."""
        if self.kind == "helpful":
            return self.fate in ("kept", "refined")
        return self.fate != "kept"

    def fate_text(self) -> str:
        """The fate as the tables print it: `kept`, or the change with the iteration whose
        gate accepted it (`merged@2`; the paper's subscript)."""
        if self.fate_iteration is None:
            return self.fate
        return f"{self.fate}@{self.fate_iteration}"


def _first_credit(
    plan: AggregationResult, agent: str, skill: str
) -> tuple[float | None, str | None]:
    for evidence in plan.probe_evidence:
        if evidence.agent == agent and evidence.skill_id == skill:
            return evidence.critic_utility, evidence.critic_verdict
    direction = plan.direction(agent, skill)
    return (direction.utility, direction.verdict) if direction is not None else (None, None)


def _fate(
    gates: Sequence[GateRecord], operators: Sequence[OperatorLine], agent: str, skill: str
) -> tuple[Fate, int | None]:
    """The first accepted change that removed the skill, else the last that refined it."""
    refined_at: int | None = None
    for gate in gates:
        accepted = {d.agent for d in gate.decisions if d.accepted}
        if agent not in accepted:
            continue
        records = [
            line.record
            for line in operators
            if line.iteration == gate.iteration and line.record.agent == agent
        ]
        if skill not in gate.skills_after.get(agent, []):
            for record in records:
                if record.changed and skill in record.removed:
                    return _REMOVING_OPERATORS.get(record.operator, "pruned"), gate.iteration
            return "pruned", gate.iteration
        if any(r.changed and r.operator == "refine" and skill in r.skills for r in records):
            refined_at = gate.iteration
    return ("refined", refined_at) if refined_at is not None else ("kept", None)


def planted_outcomes(run: RunFolder, planted: PlantedLibrary) -> list[PlantedSkillOutcome]:
    """Every planted skill's first credit, measured effect and fate in the run."""
    first_plan = run.aggregates.get("1")
    first_probe = run.probe_results.get("1")
    gates, operators = run.gate.read(), run.operators.read()
    level = first_probe.result.confidence if first_probe is not None else None
    outcomes = []
    for entry in planted.skills:
        u1, verdict = (
            _first_credit(first_plan.result, entry.agent, entry.skill)
            if first_plan is not None
            else (None, None)
        )
        effect = (
            first_probe.result.effect_of(entry.agent, entry.skill)
            if first_probe is not None
            else None
        )
        decided = None
        if first_plan is not None:
            decided = next(
                (
                    e.decided_by
                    for e in first_plan.result.probe_evidence
                    if e.agent == entry.agent and e.skill_id == entry.skill
                ),
                "critic" if u1 is not None else "none",
            )
        fate, at = _fate(gates, operators, entry.agent, entry.skill)
        outcomes.append(
            PlantedSkillOutcome(
                agent=entry.agent,
                skill=entry.skill,
                kind=entry.kind,
                u1=u1,
                critic_verdict=verdict,
                probe_effect=effect.effect if effect is not None else None,
                probe_low=effect.low if effect is not None else None,
                probe_high=effect.high if effect is not None else None,
                probe_verdict=effect.verdict if effect is not None else None,
                probe_confidence=level if effect is not None else None,
                decided_by=decided,
                fate=fate,
                fate_iteration=at,
            )
        )
    return outcomes


def separation(outcomes: list[PlantedSkillOutcome]) -> float | None:
    """Mean u1 of the helpful skills minus that of the harmful ones (Table 5; None when a kind
    has no credited skill)."""
    helpful = [o.u1 for o in outcomes if o.kind == "helpful" and o.u1 is not None]
    harmful = [o.u1 for o in outcomes if o.kind == "harmful" and o.u1 is not None]
    if not helpful or not harmful:
        return None
    return sum(helpful) / len(helpful) - sum(harmful) / len(harmful)
