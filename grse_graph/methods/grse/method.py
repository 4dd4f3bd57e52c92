"""GRSE behind the credit-method seam: groups of G rollouts, the group-relative critic, the
aggregation into edit directions and induction patterns, and the replace utility rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from grse_graph.llm.tokens import CountsTokens
from grse_graph.methods.base import (
    BaseCreditMethod,
    CitedDiagnosis,
    CreditInputs,
    CreditRecord,
    CreditUnit,
    CreditUnits,
    EvolutionSpec,
    MethodSettings,
    QuestionRollouts,
    ReportInputs,
    iteration_rows,
    records_of,
)
from grse_graph.methods.grse.advantages import DEFAULT_EPS, group_advantages, keep_group
from grse_graph.methods.grse.aggregate import (
    DEFAULT_AGGREGATE_MAX_TOKENS,
    AggregationSettings,
    aggregate,
)
from grse_graph.methods.grse.critic import GroupCritic
from grse_graph.methods.grse.critic_schema import CritiqueResult
from grse_graph.methods.grse.payload import PayloadLimits
from grse_graph.methods.operators.base import OperatorSettings
from grse_graph.methods.plan import AggregationResult, DiagnosisCounts
from grse_graph.methods.rounds import UpdateInputs

DEFAULT_PAYLOAD_TOKENS = 6000
"""The critic payload's token budget: it fits the embedded engine's 8,192-token context next to
the critic's prompt, schema and 1,024-token answer. Raise it for a long-context critic."""


class GrseSettings(MethodSettings):
    """GRSE's section of `TrainConfig` (paper defaults: G = 4, critic cap from the role).

    `output_contrast` and `tool_error_rule` are the project's additions to the paper's critic
    (`GroupCritic`), listed in `project_additions`: `TrainConfig.paper_mode` turns them off.
    """

    project_additions: ClassVar[tuple[str, ...]] = ("output_contrast", "tool_error_rule")

    name: Literal["grse"] = "grse"
    group_size: int = Field(default=4, ge=1)
    eps: float = Field(default=DEFAULT_EPS, gt=0.0)
    dapo_filter: bool = False
    structured: bool = True
    with_labels: bool = False
    critic_max_tokens: int | None = Field(
        default=None, ge=1, description="critic cap; None: the critic role's (paper: 4,000)"
    )
    max_diagnoses: int | None = Field(
        default=None, ge=1, description="diagnoses per critic reply; None: no bound (paper)"
    )
    payload_limits: PayloadLimits = Field(
        default_factory=lambda: PayloadLimits(max_tokens=DEFAULT_PAYLOAD_TOKENS)
    )
    aggregation: AggregationSettings = Field(default_factory=AggregationSettings)
    aggregate_max_tokens: int = Field(default=DEFAULT_AGGREGATE_MAX_TOKENS, ge=1)
    operators: OperatorSettings = Field(default_factory=OperatorSettings)
    output_contrast: bool = Field(
        default=True,
        description="project addition: each usable diagnosis carries the agent's output in a "
        "failed and a successful run as induction evidence",
    )
    tool_error_rule: bool = Field(
        default=True,
        description="project addition: a tool_failure diagnosis needs a tool error in a cited "
        "failed step",
    )


class CritiqueRecord(CreditRecord):
    """GRSE's credit record: one question's group, its advantages and the checked critique.

    `result` is None when the group was not sent to the critic (`kept` False: DAPO filter) or
    when the critic failed (`error` says why; the question then contributes no evidence).
    """

    method: Literal["grse"] = "grse"
    advantages: list[float]
    result: CritiqueResult | None = None

    def cited_diagnoses(self) -> list[CitedDiagnosis]:
        """The critique's usable diagnoses (accepted or repaired by the checks)."""
        if self.result is None:
            return []
        return [
            CitedDiagnosis(diagnosis=c.diagnosis, is_hypothesis=c.is_hypothesis)
            for c in self.result.diagnoses
            if c.usable
        ]

    def feedback_for(self, agent: str) -> list[str]:
        """The critic's agent-level feedback about `agent`."""
        if self.result is None:
            return []
        return [f.feedback for f in self.result.agent_feedback if f.agent == agent]


def critic_unit_id(iteration: int, question_id: str) -> str:
    """Id of the critic call for one question's group in an iteration."""
    return f"it{iteration}-{question_id}-critic"


class GrseMethod(BaseCreditMethod[GrseSettings, CritiqueRecord]):
    """Group-relative structured credit (GUIDE §3)."""

    name: ClassVar[str] = "grse"
    title: ClassVar[str] = "GRSE"
    settings_type: ClassVar[type[MethodSettings]] = GrseSettings
    record_type: ClassVar[type[CreditRecord]] = CritiqueRecord

    @classmethod
    def unread_settings(cls, settings: MethodSettings) -> frozenset[str]:
        # The first agent's n=G call presamples a group; a group of one has nothing to share
        # (training.nodes.rollouts: presample needs group_size > 1).
        if isinstance(settings, GrseSettings) and settings.group_size == 1:
            return cls.ignored_settings | {"first_agent_n"}
        return cls.ignored_settings

    def rollouts_per_question(self) -> int:
        return self.settings.group_size

    def credit_units(self, iteration: int, groups: Sequence[QuestionRollouts]) -> CreditUnits:
        """One unit per kept group; a group the DAPO filter drops is recorded, not critiqued."""
        s = self.settings
        out = CreditUnits()
        for group in groups:
            unit_id = critic_unit_id(iteration, group.question_id)
            if keep_group(group.rewards, s.dapo_filter, s.eps):
                out.units.append(
                    CreditUnit(
                        unit_id=unit_id,
                        question_id=group.question_id,
                        rollout_ids=list(group.rollout_ids),
                    )
                )
                continue
            out.skipped.append(
                CritiqueRecord(
                    iteration=iteration,
                    unit_id=unit_id,
                    question_id=group.question_id,
                    rollout_ids=list(group.rollout_ids),
                    rewards=list(group.rewards),
                    advantages=group_advantages(group.rewards, s.eps),
                    kept=False,
                )
            )
        return out

    def critic(self, inputs: CreditInputs) -> GroupCritic:
        """The group critic with this run's settings."""
        s = self.settings
        provider = inputs.provider
        return GroupCritic(
            provider,
            max_tokens=s.critic_max_tokens,
            max_diagnoses=s.max_diagnoses,
            structured=s.structured,
            with_labels=s.with_labels,
            limits=s.payload_limits,
            observed_skill_use={a.name: a.skill_mode != "inline" for a in inputs.team.agents},
            token_counter=(
                provider.token_counter("critic") if isinstance(provider, CountsTokens) else None
            ),
            answer_length_note=inputs.task.name == "hotpotqa"
            or inputs.question.context.get("metric") == "hotpotqa",
            output_contrast=s.output_contrast,
            tool_error_rule=s.tool_error_rule,
        )

    async def credit(self, unit: CreditUnit, inputs: CreditInputs) -> CritiqueRecord:
        rewards = [r.reward for r in inputs.rollouts]
        advantages = group_advantages(rewards, self.settings.eps)
        result = await self.critic(inputs).critique(
            inputs.question, inputs.libraries, inputs.rollouts, advantages
        )
        return CritiqueRecord(
            **self.base_fields(unit, inputs), advantages=advantages, result=result
        )

    def failed_record(self, unit: CreditUnit, inputs: CreditInputs, error: str) -> CritiqueRecord:
        rewards = [r.reward for r in inputs.rollouts]
        return CritiqueRecord(
            **self.base_fields(unit, inputs),
            advantages=group_advantages(rewards, self.settings.eps),
            error=error,
        )

    async def plan(self, inputs: UpdateInputs) -> AggregationResult:
        critiques = records_of(inputs.records, CritiqueRecord)
        return await aggregate(
            [r.result for r in critiques if r.result is not None],
            inputs.libraries,
            inputs.provider,
            max_tokens=self.settings.aggregate_max_tokens,
            settings=self.settings.aggregation,
            group_rewards={r.question_id: r.rewards for r in critiques},
        )

    def evolution(self) -> EvolutionSpec:
        return EvolutionSpec(settings=self.settings.operators)

    def summary(self) -> str:
        s = self.settings
        flags = ("structured", "dapo_filter", "with_labels", "output_contrast", "tool_error_rule")
        return f"group size G={s.group_size}, " + ", ".join(f"{k}={getattr(s, k)}" for k in flags)

    def report_lines(self, inputs: ReportInputs) -> list[str]:
        critiques = records_of(inputs.records, CritiqueRecord)
        return [*_CRITIC_HEADING, *iteration_rows(critiques, _critic_row)]


_CRITIC_HEADING = (
    "## Critic",
    "",
    "| iteration | groups | kept | critic failed | accepted | repaired | dropped "
    "| hypotheses | payload chars | naive chars | payload tokens |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
)


def _critic_row(iteration: int, rows: list[CritiqueRecord]) -> str:
    counts = DiagnosisCounts()
    payload = naive = tokens = 0
    for c in rows:
        if c.result is not None:
            counts = counts + c.result.counts
            payload += c.result.payload_chars
            naive += c.result.naive_payload_chars
            tokens += c.result.payload_tokens or 0
    return (
        f"| {iteration} | {len(rows)} | {sum(c.kept for c in rows)} | "
        f"{sum(c.error is not None for c in rows)} | {counts.accepted} | "
        f"{counts.repaired} | {counts.dropped} | {counts.hypothesis} | {payload} | "
        f"{naive} | {tokens or '-'} |"
    )
