"""SkillMAS behind the credit-method seam (spec skillmas.md; issue 14), on the shared loop.

Every round uses the same fixed train subset; the round update gives the complete next
libraries, committed by `accept`: there is no per-agent gate, changes take effect at once and
the best round is picked after the fact, as in the paper.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from grse_graph.errors import ModelRequestRefused, StructuredOutputError
from grse_graph.methods.base import (
    BaseCreditMethod,
    CreditInputs,
    CreditRecord,
    CreditUnit,
    MethodSettings,
    ReportInputs,
    records_of,
)
from grse_graph.methods.plan import AggregationResult
from grse_graph.methods.rounds import (
    CommitPolicy,
    RoundRequest,
    RoundUpdate,
    StartInputs,
    TeamRequest,
    UpdateInputs,
)
from grse_graph.skills import SkillLibrary
from grse_graph.team.spec import TeamSpec

from .diagnosis import AnalystEvidence
from .execution import fixed_subset, round_state, unit_team
from .report import report_lines
from .round import measurement, update_round
from .settings import SkillmasSettings
from .skills import lineage_id
from .state import SkillmasState
from .tables import ExecutorUtilityTable, SkillUtilityTable
from .team import seed_members
from .trace import (
    SkillmasRecord,
    build_trace,
    judge_step,
    local_outcomes,
    step_signals,
    task_type_of,
)


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
    # Its rounds commit by `accept` (no gate: delta), its own update edits the libraries (no
    # shared operators: schedule; nothing proposed to review), one rollout per question (no
    # n=G presampling), and the probe's measured credit has no place in its update; it
    # drafts no operator body, so nothing goes through the memorisation check.
    ignored_settings: ClassVar[frozenset[str]] = frozenset(
        {"delta", "schedule", "review", "first_agent_n", "probe", "memorisation_check"}
    )

    @classmethod
    def unread_settings(cls, settings: MethodSettings) -> frozenset[str]:
        # Only checkpoint=validation runs the validation split (`commit_policy`).
        # validation_sampling is not listed: the task protocol fills it in for every run.
        if isinstance(settings, SkillmasSettings) and settings.checkpoint == "train":
            return cls.ignored_settings | {"validation_size", "validation_repeats"}
        return cls.ignored_settings

    def initial_state(self, inputs: StartInputs) -> SkillmasState:
        """X_0: the seed team, the fixed subset, a Q^s record per starting skill and a Q^a
        record per seed agent."""
        skills, executors = SkillUtilityTable(), ExecutorUtilityTable()
        for agent, library in inputs.libraries.items():
            for skill in library.skills:
                skills = skills.initialize(lineage_id(skill, agent))
        for agent in inputs.team.agent_names:
            executors = executors.initialize(agent)
        return SkillmasState(
            skills=skills,
            executors=executors,
            members=seed_members(inputs.team),
            subset=fixed_subset(list(inputs.train), inputs.size, inputs.seed),
        )

    def round_questions(self, request: RoundRequest) -> list[str]:
        """The fixed subset drawn once before round 1, every round."""
        return list(round_state(request.state).subset)

    def rounds(self, iterations: int) -> int:
        """R training rounds, and the final measurement with `measure_final`."""
        return iterations + (1 if self.settings.measure_final else 0)

    def team_for(self, request: TeamRequest) -> TeamSpec:
        return unit_team(request, self.settings)

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

    async def plan(self, inputs: UpdateInputs) -> AggregationResult:
        """The round's used-skill counts per agent (invocation bookkeeping; SkillMAS's edits
        are made by its own round update, not by the shared operators)."""
        counts: dict[str, dict[str, int]] = {}
        for record in records_of(inputs.records, SkillmasRecord):
            for agent, names in (record.trace.used if record.trace else {}).items():
                for name in names:
                    counts.setdefault(agent, {})
                    counts[agent][name] = counts[agent].get(name, 0) + 1
        return AggregationResult(
            question_ids=[r.question_id for r in inputs.records], invocations=counts
        )

    async def update(self, inputs: UpdateInputs) -> RoundUpdate:
        """Round r's learning, evidence, evolution and restructuring (spec §9.3 steps 3-8) on
        its verified traces, with the complete next libraries; after the last training round,
        the execution-only measurement of the final state (libraries unchanged)."""
        x, plan = round_state(inputs.state), await self.plan(inputs)
        records = records_of(inputs.records, SkillmasRecord)
        traces = [r.trace for r in records if r.trace is not None]
        if inputs.iteration > inputs.iterations:
            measured = measurement(x, inputs.iteration, traces)
            return RoundUpdate(plan=plan, state=measured, libraries=dict(inputs.libraries))
        outcome = await update_round(
            x,
            iteration=inputs.iteration,
            traces=traces,
            judge_calls=sum(r.judge_calls for r in records),
            sources=AnalystEvidence(
                rollouts=dict(inputs.rollouts),
                gold={r.question_id: inputs.questions[r.question_id].answer for r in records},
                libraries=inputs.libraries,
                provider=inputs.provider,
            ),
            settings=self.settings,
            library_limit=inputs.library_limit,
            seed_roles={a.name: a.role for a in inputs.team.agents},
            domain=f"a question-answering agent team ({inputs.task.name})",
        )
        rate = outcome.state.round.success_rate if outcome.state.round else 0.0
        return RoundUpdate(plan=plan, state=outcome.state, libraries=outcome.libraries, score=rate)

    def commit_policy(self, iteration: int, iterations: int) -> CommitPolicy:
        """`accept` in training rounds, `keep` in the final measurement; the base runs the
        validation set only with checkpoint=validation."""
        return CommitPolicy(
            kind="keep" if iteration > iterations else "accept",
            validate_base=self.settings.checkpoint == "validation",
        )

    def committed_state(
        self, state: BaseModel | None, base_score: float | None
    ) -> BaseModel | None:
        """The round's state with the validation score of the state it executed (None unless
        checkpoint=validation)."""
        x = round_state(state)
        if x.round is None:
            return x
        return x.model_copy(
            update={"round": x.round.model_copy(update={"validation_score": base_score})}
        )

    def summary(self) -> str:
        s = self.settings
        return (
            f"task type {s.task_type}, k={s.k}, pool >= {s.pool_min_uses} uses and "
            f">= {s.pool_min_success_rate} success ({s.pool_counting} counting), restructure "
            f"{s.restructure} (at most {s.max_agents} agents, specialists {s.specialist_mode}), "
            f"executor credit {s.executor_credit}, drop {s.drop_policy}, analyst {s.analyst}"
        )

    def report_lines(self, inputs: ReportInputs) -> list[str]:
        return report_lines(
            records_of(inputs.records, SkillmasRecord),
            [s for s in inputs.states if isinstance(s, SkillmasState)],
            self.settings.checkpoint,
        )
