"""The group-relative critic: one call per question group, attribution checks, one repair round."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from grse_graph.errors import StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.llm.structured import astructured_call, schema_narrowing
from grse_graph.llm.tokens import TokenCounter
from grse_graph.methods.aggregation import first_credit_per_skill
from grse_graph.methods.grse import prompts
from grse_graph.methods.grse.checks import CheckContext, check_diagnosis, is_hypothesis
from grse_graph.methods.grse.contrast import output_contrast
from grse_graph.methods.grse.critic_schema import (
    AgentVocabulary,
    CheckedDiagnosis,
    CriticCredits,
    CriticOutput,
    CriticRepair,
    CriticVocabulary,
    CritiqueResult,
    count_diagnoses,
    critic_credits_schema,
    critic_output_schema,
    critic_repair_schema,
    step_label,
)
from grse_graph.methods.grse.payload import CriticPayload, PayloadLimits, build_critic_payload
from grse_graph.methods.plan import FailureDiagnosis, SkillCredit
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout


def group_vocabulary(
    ctx: CheckContext, *, flat: bool = False, tool_error_rule: bool = True
) -> CriticVocabulary:
    """Each agent's skills and step labels in a group, split by whether the rollout succeeded
    (`flat`: advertised as one vocabulary over all agents). Without the `tool_error_rule`
    every agent may name tool_failure, tool error or not."""
    failed: dict[str, list[str]] = {agent: [] for agent in ctx.library}
    successful: dict[str, list[str]] = {agent: [] for agent in ctx.library}
    tool_errors: set[str] = set()
    for (rollout, step), facts in sorted(ctx.steps.items()):
        label = step_label(rollout - 1, step - 1)
        bucket = successful if ctx.is_success(rollout) else failed
        bucket.setdefault(facts.agent, []).append(label)
        if bucket is failed and facts.tool_errors:
            tool_errors.add(facts.agent)
    return CriticVocabulary(
        agents={
            agent: AgentVocabulary(
                skills=tuple(sorted(ctx.library.get(agent, frozenset()))),
                failed_refs=tuple(failed.get(agent, [])),
                successful_refs=tuple(successful.get(agent, [])),
                failed_tool_errors=agent in tool_errors or not tool_error_rule,
            )
            for agent in {**failed, **successful}
        },
        flat=flat,
    )


def _render_violations(items: Sequence[tuple[FailureDiagnosis, list[str]]]) -> str:
    blocks = []
    for n, (diagnosis, violations) in enumerate(items, start=1):
        blocks.append(
            f"Diagnosis {n}: {diagnosis.model_dump_json(exclude_defaults=False)}\n"
            + "\n".join(f"- {v}" for v in violations)
        )
    return "\n\n".join(blocks)


class GroupCritic:
    """Critiques one question's group of rollouts (GUIDE §3).

    One critic call returns credits, agent feedback and diagnoses; every diagnosis is checked by
    the attribution rules; the violating ones go back to the critic once, together with their
    violations; a repaired diagnosis that still violates a rule is dropped. `structured=False`
    is the `w/o structure` variant: the same group-relative credits and agent feedback, with
    neither the diagnosis schema nor its checks.

    `max_diagnoses` bounds the diagnoses of one reply (None: no bound, as in the paper).
    `observed_skill_use` says per agent whether skill loads are recorded (tool and path modes),
    `token_counter` counts the payload in the critic's tokens when `limits.max_tokens` is set,
    and `answer_length_note` appends App. F's HotpotQA note to the system prompt. Two of the
    project's additions to the paper can be switched off (paper mode): `output_contrast` (each
    usable diagnosis carries the diagnosed agent's output in a failed and a successful run, as
    induction evidence) and `tool_error_rule` (a tool_failure needs a tool error).
    """

    def __init__(
        self,
        provider: ChatModelProvider,
        *,
        max_tokens: int | None = None,
        max_diagnoses: int | None = None,
        structured: bool = True,
        with_labels: bool = False,
        limits: PayloadLimits | None = None,
        observed_skill_use: Mapping[str, bool] | None = None,
        token_counter: TokenCounter | None = None,
        answer_length_note: bool = False,
        output_contrast: bool = True,
        tool_error_rule: bool = True,
    ) -> None:
        self.provider = provider
        self.max_tokens = max_tokens
        self.max_diagnoses = max_diagnoses
        self.structured = structured
        self.with_labels = with_labels
        self.limits = limits or PayloadLimits()
        self.observed_skill_use = dict(observed_skill_use or {})
        self.token_counter = token_counter
        self.answer_length_note = answer_length_note
        self.output_contrast = output_contrast
        self.tool_error_rule = tool_error_rule
        self.system_prompt = prompts.critic_system(
            structured=structured, answer_length_note=answer_length_note
        )

    def payload(
        self,
        question: TaskQuestion,
        libraries: Mapping[str, SkillLibrary],
        rollouts: Sequence[Rollout],
        advantages: Sequence[float],
    ) -> CriticPayload:
        """The payload this critic would send for a group (its citation constraints only for
        the structured critic: App. F)."""
        names = {agent: library.names() for agent, library in libraries.items()}
        constraints = (
            group_vocabulary(
                CheckContext.build(rollouts, names), tool_error_rule=self.tool_error_rule
            )
            if self.structured
            else None
        )
        return build_critic_payload(
            question,
            libraries,
            rollouts,
            advantages,
            with_labels=self.with_labels,
            structured=self.structured,
            limits=self.limits,
            observed_skill_use=self.observed_skill_use,
            constraints=constraints,
            token_counter=self.token_counter,
        )

    async def critique(
        self,
        question: TaskQuestion,
        libraries: Mapping[str, SkillLibrary],
        rollouts: Sequence[Rollout],
        advantages: Sequence[float],
    ) -> CritiqueResult:
        """Critique one group. Raises `StructuredOutputError` if the first call cannot be parsed."""
        # Counting tokens may ask the critic's server: keep it off the event loop.
        payload = await asyncio.to_thread(self.payload, question, libraries, rollouts, advantages)
        base = CritiqueResult(
            question_id=question.id,
            category=question.category if self.with_labels else None,
            structured=self.structured,
            payload_chars=payload.size_chars,
            naive_payload_chars=payload.naive_size_chars,
            payload_tokens=payload.size_tokens,
        )
        if not self.structured:
            return await self._credits_only(payload, libraries, base)
        return await self._structured(payload, libraries, rollouts, base)

    def _messages(self, payload: CriticPayload, system: str | None = None) -> list[BaseMessage]:
        return [
            SystemMessage(system or self.system_prompt),
            HumanMessage(prompts.CRITIC_USER.format(payload=payload.text)),
        ]

    async def _credits_only(
        self,
        payload: CriticPayload,
        libraries: Mapping[str, SkillLibrary],
        base: CritiqueResult,
    ) -> CritiqueResult:
        """One call for credits and agent feedback only (the `w/o structure` critic, and the
        fallback that keeps a group's credits when its diagnoses cannot be parsed)."""
        model = self.provider.chat("critic", max_tokens=self.max_tokens)
        system = prompts.critic_system(structured=False, answer_length_note=self.answer_length_note)
        names = {agent: library.names() for agent, library in libraries.items()}
        # The structured schema's list bounds, where it has them (a narrowing engine).
        schema = (
            critic_credits_schema(sum(map(len, names.values())), len(names))
            if schema_narrowing(model) != "off"
            else CriticCredits
        )
        output = await astructured_call(model, schema, self._messages(payload, system))
        credits, dropped_credits = first_credit_per_skill(output.credits, names)
        return base.model_copy(
            update={
                "credits": credits,
                "agent_feedback": list(output.agent_feedback),
                "dropped_credits": dropped_credits,
                "critic_calls": 1,
            }
        )

    async def _structured(
        self,
        payload: CriticPayload,
        libraries: Mapping[str, SkillLibrary],
        rollouts: Sequence[Rollout],
        base: CritiqueResult,
    ) -> CritiqueResult:
        model = self.provider.chat("critic", max_tokens=self.max_tokens)
        messages = self._messages(payload)
        names = {agent: library.names() for agent, library in libraries.items()}
        # The narrowed schema only pays where the engine enforces it and its grammar is cheap;
        # shown in a prompt its per-agent enums cost thousands of tokens (the payload names
        # the skills and steps anyway, and the checks catch a wrong name).
        narrowing = schema_narrowing(model)
        vocabulary = (
            group_vocabulary(
                CheckContext.build(rollouts, names),
                flat=narrowing == "flat",
                tool_error_rule=self.tool_error_rule,
            )
            if narrowing != "off"
            else None
        )
        schema = critic_output_schema(
            any(r.reward < 1.0 for r in rollouts), vocabulary, self.max_diagnoses
        )
        try:
            raw = await astructured_call(model, schema, messages)
        except StructuredOutputError as error:
            # A failing group must be diagnosed; a critic that cannot comply still keeps the
            # group's credits and feedback (the diagnoses are lost and the reason recorded).
            kept = await self._credits_only(payload, libraries, base)
            return kept.model_copy(update={"critic_calls": 2, "diagnosis_error": str(error)})
        # Back to the plain models: the narrowed subclasses only shape the advertised schema.
        output = CriticOutput.model_validate(raw.model_dump())
        credits, dropped_credits = first_credit_per_skill(output.credits, names)
        ctx = CheckContext.build(rollouts, names, credits)

        checked: list[CheckedDiagnosis | None] = []
        failing: list[tuple[int, FailureDiagnosis, list[str]]] = []
        for diagnosis in output.diagnoses:
            violations = check_diagnosis(diagnosis, ctx, tool_error_rule=self.tool_error_rule)
            if violations:
                failing.append((len(checked), diagnosis, violations))
                checked.append(None)
            else:
                checked.append(
                    CheckedDiagnosis(
                        diagnosis=diagnosis,
                        status="accepted",
                        is_hypothesis=is_hypothesis(diagnosis),
                    )
                )

        calls = 1
        if failing:
            calls += 1
            repaired, credits, dropped_credits = await self._repair(
                payload, failing, ctx, credits, dropped_credits, names, vocabulary
            )
            for (slot, _, _), result in zip(failing, repaired, strict=True):
                checked[slot] = result

        final = [
            c.model_copy(update={"contrast": output_contrast(c.diagnosis, rollouts)})
            if c.usable and self.output_contrast
            else c
            for c in checked
            if c is not None
        ]
        return base.model_copy(
            update={
                "credits": credits,
                "agent_feedback": list(output.agent_feedback),
                "diagnoses": final,
                "counts": count_diagnoses(final),
                "dropped_credits": dropped_credits,
                "critic_calls": calls,
            }
        )

    async def _repair(
        self,
        payload: CriticPayload,
        failing: Sequence[tuple[int, FailureDiagnosis, list[str]]],
        ctx: CheckContext,
        credits: list[SkillCredit],
        dropped_credits: int,
        names: Mapping[str, Iterable[str]],
        vocabulary: CriticVocabulary | None,
    ) -> tuple[list[CheckedDiagnosis], list[SkillCredit], int]:
        """One repair round for the violating diagnoses; returns one result per failing input."""
        model = self.provider.chat("critic", max_tokens=self.max_tokens)
        text = prompts.CRITIC_REPAIR.format(
            payload=payload.text,
            violations=_render_violations([(d, v) for _, d, v in failing]),
        )
        messages: list[BaseMessage] = [SystemMessage(self.system_prompt), HumanMessage(text)]
        schema = critic_repair_schema(vocabulary, len(failing))
        try:
            repair = CriticRepair.model_validate(
                (await astructured_call(model, schema, messages)).model_dump()
            )
        except StructuredOutputError as error:
            reason = f"repair call failed: {error}"
            return (
                [
                    CheckedDiagnosis(
                        diagnosis=d, status="dropped", violations=v, final_violations=[reason]
                    )
                    for _, d, v in failing
                ],
                credits,
                dropped_credits,
            )

        merged, dropped = first_credit_per_skill([*credits, *repair.credits], names)
        repaired_ctx = ctx.with_credits(merged)
        results: list[CheckedDiagnosis] = []
        for n, (_, original, violations) in enumerate(failing):
            if n >= len(repair.diagnoses):
                results.append(
                    CheckedDiagnosis(
                        diagnosis=original,
                        status="dropped",
                        violations=violations,
                        final_violations=["the repair returned no corrected diagnosis for it"],
                    )
                )
                continue
            fixed = repair.diagnoses[n]
            remaining = check_diagnosis(fixed, repaired_ctx, tool_error_rule=self.tool_error_rule)
            results.append(
                CheckedDiagnosis(
                    diagnosis=fixed,
                    status="dropped" if remaining else "repaired",
                    violations=violations,
                    final_violations=remaining,
                    original=original,
                    is_hypothesis=not remaining and is_hypothesis(fixed),
                )
            )
        # `credits` were already unique and valid, so every drop here is a repair credit.
        return results, merged, dropped_credits + dropped
