"""MASkills behind the credit-method seam (spec maskills.md §1-§6).

One rollout per question; one critic call per trajectory crediting every skill in its skill
trace (exposure-based credit) plus a residual per agent; per-skill aggregation (one credit maps
directly, several are merged by one optimizer call); the moving-average utility rule
u <- 0.6 u + 0.4 * batch mean; operators refine -> consolidate -> prune -> induce with
MASkills' prune rule and at most one induced skill per agent. The per-agent validation gate is
the training loop's, shared with GRSE.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from grse_graph.methods.base import (
    BaseCreditMethod,
    CreditInputs,
    CreditRecord,
    CreditUnit,
    EvolutionSpec,
    MethodSettings,
    ReportInputs,
    UtilityRule,
    iteration_rows,
    records_of,
)
from grse_graph.methods.maskills.aggregate import aggregate
from grse_graph.methods.maskills.critic import TrajectoryCritic
from grse_graph.methods.maskills.operators import Induce, consolidate_with_stats, prune
from grse_graph.methods.maskills.record import MaskillsRecord
from grse_graph.methods.maskills.settings import MaskillsSettings
from grse_graph.methods.maskills.trace import build_skill_trace
from grse_graph.methods.operators.registry import OPERATORS, Operator
from grse_graph.methods.plan import AggregationResult
from grse_graph.methods.rounds import UpdateInputs
from grse_graph.methods.utility import MovingAverageUtilities
from grse_graph.team.rollout import Rollout


def _only_rollout(unit: CreditUnit, rollouts: Sequence[Rollout]) -> Rollout:
    if len(rollouts) != 1:
        raise ValueError(
            f"MASkills credit unit {unit.unit_id}: expected one trajectory, got {len(rollouts)}"
        )
    return rollouts[0]


class MaskillsMethod(BaseCreditMethod[MaskillsSettings, MaskillsRecord]):
    """Per-trajectory, exposure-based skill credit with a moving-average utility (MASkills)."""

    name: ClassVar[str] = "maskills"
    title: ClassVar[str] = "MASkills"
    settings_type: ClassVar[type[MethodSettings]] = MaskillsSettings
    record_type: ClassVar[type[CreditRecord]] = MaskillsRecord
    # One rollout per question: the first agent's n=G presampling (training.nodes.rollouts,
    # only for group_size > 1) never runs.
    ignored_settings: ClassVar[frozenset[str]] = frozenset({"first_agent_n"})

    def critic(self, inputs: CreditInputs) -> TrajectoryCritic:
        """The trajectory critic with this run's settings."""
        s = self.settings
        return TrajectoryCritic(
            inputs.provider,
            max_tokens=s.critic_max_tokens,
            limits=s.payload_limits,
            excerpt_chars=s.skill_excerpt_chars,
            brevity_hint=s.brevity_hint_for(inputs.task.name),
        )

    async def credit(self, unit: CreditUnit, inputs: CreditInputs) -> MaskillsRecord:
        rollout = _only_rollout(unit, inputs.rollouts)
        trace = build_skill_trace(rollout)
        result = await self.critic(inputs).credit(inputs.question, inputs.libraries, rollout, trace)
        return MaskillsRecord(**self.base_fields(unit, inputs), trace=trace, result=result)

    def failed_record(self, unit: CreditUnit, inputs: CreditInputs, error: str) -> MaskillsRecord:
        # The trace does not depend on the critic: the trajectory's exposure still counts.
        trace = build_skill_trace(_only_rollout(unit, inputs.rollouts))
        return MaskillsRecord(**self.base_fields(unit, inputs), trace=trace, error=error)

    async def plan(self, inputs: UpdateInputs) -> AggregationResult:
        records = records_of(inputs.records, MaskillsRecord)
        return await aggregate(records, inputs.libraries, inputs.provider, self.settings)

    def utility_rule(self) -> UtilityRule:
        return MovingAverageUtilities(keep=self.settings.utility_keep)

    def evolution(self) -> EvolutionSpec:
        operators: dict[str, Operator] = {
            **OPERATORS,
            "consolidate": consolidate_with_stats,
            "prune": prune,
            "induce": Induce(self.settings.max_hard_cases),
        }
        return EvolutionSpec(settings=self.settings.operators, operators=operators)

    def summary(self) -> str:
        s = self.settings
        return (
            f"1 rollout per question, exposure-based credit, utility EMA keep={s.utility_keep}, "
            f"prune at utility <= {s.prune_utility_threshold}, hard cases at reward <= "
            f"{s.hard_case_threshold}"
        )

    def report_lines(self, inputs: ReportInputs) -> list[str]:
        threshold = self.settings.hard_case_threshold
        records = records_of(inputs.records, MaskillsRecord)
        rows = iteration_rows(records, lambda t, of_t: _row(t, of_t, threshold))
        return [*_HEADING, *rows]


_HEADING = (
    "## MASkills credit",
    "",
    "One critic call per trajectory; every skill in the trajectory's skill trace is "
    "credited (exposure-based credit).",
    "",
    "| iteration | trajectories | critic failed | credits | helped | redundant "
    "| harmful | neutral | uncredited pairs | dropped | new skill asked | hard cases "
    "| payload chars |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
)


def _row(iteration: int, mine: list[MaskillsRecord], hard_case_threshold: float) -> str:
    """One iteration's row; hard cases are trajectories at or below the threshold."""
    results = [r.result for r in mine if r.result is not None]
    verdicts = Counter(c.verdict for res in results for c in res.credits)
    asked = sum(x.needs_new_skill for res in results for x in res.residuals)
    hard = sum(r.reward <= hard_case_threshold for r in mine)
    return (
        f"| {iteration} | {len(mine)} | {sum(r.error is not None for r in mine)} | "
        f"{sum(len(res.credits) for res in results)} | {verdicts['helped']} | "
        f"{verdicts['redundant']} | {verdicts['harmful']} | {verdicts['neutral']} | "
        f"{sum(len(res.uncredited) for res in results)} | "
        f"{sum(res.dropped_credits for res in results)} | {asked} | {hard} | "
        f"{sum(res.payload_chars for res in results)} |"
    )
