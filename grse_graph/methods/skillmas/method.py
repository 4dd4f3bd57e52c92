"""SkillMAS behind the credit-method seam (spec skillmas.md; issue 14).

SkillMAS runs its own round loop (`SkillmasMethod.training_graph`, built in
`grse_graph.methods.skillmas.loop`): a fixed train subset executed every round by the current
team with k selected skills per agent step (shadow skills offered), one credit unit per
rollout (used-skill attribution, with a judge call where a step said nothing), then one round
update (utility learning, retained evidence, diagnosis, skill evolution with the validation
pool, restructuring). There is no per-agent gate: changes take effect at once and the best
round is picked after the fact, as in the paper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from grse_graph.errors import ModelRequestRefused, StructuredOutputError
from grse_graph.methods.base import (
    BaseCreditMethod,
    CreditInputs,
    CreditRecord,
    CreditUnit,
    MethodSettings,
    PlanInputs,
)
from grse_graph.methods.plan import AggregationResult
from grse_graph.skills import SkillLibrary

from .judge import judge_step
from .report import report_lines
from .settings import SkillmasSettings
from .state import SkillmasState
from .trace import StepSignals, VerifiedTrace, build_trace, step_signals, task_type_of
from .verifiers import local_outcomes


class SkillmasRecord(CreditRecord):
    """One rollout's verified trace and the used-skill signals of each of its steps."""

    method: Literal["skillmas"] = "skillmas"
    trace: VerifiedTrace | None = None
    signals: list[StepSignals] = Field(default_factory=list)
    judge_calls: int = 0


def tool_agents(inputs: CreditInputs) -> list[str]:
    """The seed agents that hold task tools for this question (the retriever)."""
    return [
        a.name
        for a in inputs.team.agents
        if a.tools != () and inputs.task.agent_tools(inputs.question, a.name)
    ]


def tool_budget(inputs: CreditInputs) -> int:
    """maxSteps: the task-tool budgets of the agents that ran with task tools (row 5); 0 on a
    task without tools (HotpotQA), so every success there is reusable."""
    ran = {s.agent for r in inputs.rollouts for s in r.steps}
    holders = set(tool_agents(inputs))
    return sum(a.max_tool_calls for a in inputs.team.agents if a.name in ran and a.name in holders)


class SkillmasMethod(BaseCreditMethod[SkillmasSettings, SkillmasRecord]):
    """Utility tables, a validation pool and a team that restructures itself (SkillMAS)."""

    name: ClassVar[str] = "skillmas"
    title: ClassVar[str] = "SkillMAS"
    settings_type: ClassVar[type[MethodSettings]] = SkillmasSettings
    record_type: ClassVar[type[CreditRecord]] = SkillmasRecord
    state_type: ClassVar[type[BaseModel] | None] = SkillmasState
    # The round loop (loop.py) has no gate (delta), no shared operators (schedule), no review
    # node, no n=G presampling (one rollout per question) and no probe stage.
    ignored_settings: ClassVar[frozenset[str]] = frozenset(
        {"delta", "schedule", "review", "first_agent_n", "probe"}
    )

    @classmethod
    def unread_settings(cls, settings: MethodSettings) -> frozenset[str]:
        # Only checkpoint=validation runs the validation split (loop.py: send_rollouts).
        # validation_sampling is not listed: the task protocol fills it in for every run.
        if isinstance(settings, SkillmasSettings) and settings.checkpoint == "train":
            return cls.ignored_settings | {"validation_size", "validation_repeats"}
        return cls.ignored_settings

    def rollouts_per_question(self) -> int:
        return 1

    async def credit(self, unit: CreditUnit, inputs: CreditInputs) -> SkillmasRecord:
        """Used-skill attribution of one rollout: the explicit signals of every step, one
        judge call per step that had selected skills and gave no explicit signal."""
        (rollout,) = inputs.rollouts
        signals = step_signals(rollout, inputs.libraries)
        calls = 0
        for n, (step, sig) in enumerate(zip(rollout.steps, signals, strict=True)):
            if not sig.needs_judge:
                continue
            library = inputs.libraries.get(step.agent, SkillLibrary.empty(step.agent))
            calls += 1
            try:
                marked = await judge_step(
                    step, library, inputs.provider, self.settings.judge_max_tokens
                )
                signals[n] = sig.model_copy(update={"judge": marked})
            except (StructuredOutputError, ModelRequestRefused) as failure:
                # One unreadable judge answer costs that step its judge signal, not the trace.
                signals[n] = sig.model_copy(
                    update={"judge_error": f"{type(failure).__name__}: {failure}"}
                )
        trace = build_trace(
            rollout,
            question=inputs.question.question,
            gold=inputs.question.answer,
            task_type=task_type_of(inputs.question.category, self.settings.task_type),
            signals=signals,
            tool_budget=tool_budget(inputs),
            local=local_outcomes(rollout, inputs.question, tool_agents(inputs)),
        )
        return SkillmasRecord(
            **self.base_fields(unit, inputs), trace=trace, signals=signals, judge_calls=calls
        )

    async def plan(
        self,
        records: Sequence[CreditRecord],
        libraries: Mapping[str, SkillLibrary],
        inputs: PlanInputs,
    ) -> AggregationResult:
        """The round's used-skill counts per agent (invocation bookkeeping); SkillMAS's edits
        are made by its own round update, not by the shared operators."""
        counts: dict[str, dict[str, int]] = {}
        for record in records:
            if isinstance(record, SkillmasRecord) and record.trace is not None:
                for agent, names in record.trace.used.items():
                    for name in names:
                        counts.setdefault(agent, {})
                        counts[agent][name] = counts[agent].get(name, 0) + 1
        return AggregationResult(question_ids=[r.question_id for r in records], invocations=counts)

    def training_graph(self, ctx: Any) -> Any:
        """SkillMAS's own round loop over the training context (an uncompiled StateGraph)."""
        # Imported here: the loop is built from training units, and training imports methods.
        from .loop import build_skillmas_graph

        return build_skillmas_graph(ctx, self)

    def summary(self) -> str:
        s = self.settings
        return (
            f"task type {s.task_type}, k={s.k}, pool >= {s.pool_min_uses} uses and "
            f">= {s.pool_min_success_rate} success ({s.pool_counting} counting), restructure "
            f"{s.restructure} (at most {s.max_agents} agents, specialists {s.specialist_mode}), "
            f"executor credit {s.executor_credit}, drop {s.drop_policy}, analyst {s.analyst}"
        )

    def __init__(self, settings: SkillmasSettings, states: Sequence[SkillmasState] = ()) -> None:
        super().__init__(settings)
        self.states: list[SkillmasState] = list(states)

    def with_states(self, states: Sequence[SkillmasState]) -> SkillmasMethod:
        """The method carrying the run's round states, so its report section can show them."""
        return SkillmasMethod(self.settings, states)

    def report_lines(self, records: Sequence[CreditRecord]) -> list[str]:
        return report_lines(
            [r for r in records if isinstance(r, SkillmasRecord)],
            self.states,
            self.settings.checkpoint,
        )
