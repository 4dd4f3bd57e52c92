"""The MASkills critic: one critic call per trajectory (spec maskills.md §2.2-§2.4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.llm.structured import astructured_call, schema_narrowing
from grse_graph.methods.aggregation import first_credit_per_skill
from grse_graph.methods.grse.payload import PayloadLimits
from grse_graph.methods.maskills import prompts
from grse_graph.methods.maskills.payload import TrajectoryPayload, build_trajectory_payload
from grse_graph.methods.maskills.schema import (
    AgentResidual,
    MaskillsCredit,
    TrajectoryCredit,
    TrajectoryCritique,
    critique_schema,
)
from grse_graph.methods.maskills.trace import SkillTrace, build_skill_trace
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout


def usable_credits(
    credits: Iterable[MaskillsCredit], libraries: Mapping[str, SkillLibrary]
) -> tuple[list[MaskillsCredit], int]:
    """The first credit per (agent, skill) whose skill is in that agent's library, and how
    many were dropped (the reference keeps any credit of a library skill, spec §2.4)."""
    return first_credit_per_skill(
        credits, {agent: library.names() for agent, library in libraries.items()}
    )


def usable_residuals(
    residuals: Iterable[AgentResidual], agents: Sequence[str]
) -> list[AgentResidual]:
    """The first residual per team agent (in team order); others are ignored."""
    first: dict[str, AgentResidual] = {}
    for residual in residuals:
        if residual.agent in agents:
            first.setdefault(residual.agent, residual)
    return [first[a] for a in agents if a in first]


def uncredited_pairs(trace: SkillTrace, credits: Sequence[MaskillsCredit]) -> list[str]:
    """xi pairs ("agent/skill") without a credit."""
    given = {(c.agent, c.skill_id) for c in credits}
    return [f"{a}/{s}" for a, s in trace.pairs() if (a, s) not in given]


class TrajectoryCritic:
    """Credits every skill in one trajectory's skill trace, plus a residual per agent.

    Runs on the provider's "critic" role (the reference ran it on the actor model, spec D-7).
    Raises `StructuredOutputError` when the output cannot be parsed even after the
    structured-output repair round; the training loop then records the failure (counted in the
    report; the reference silently returned an empty bundle, spec D-4).
    """

    def __init__(
        self,
        provider: ChatModelProvider,
        *,
        max_tokens: int | None = None,
        limits: PayloadLimits | None = None,
        excerpt_chars: int = 800,
        brevity_hint: bool = False,
    ) -> None:
        self.provider = provider
        self.max_tokens = max_tokens
        self.limits = limits or PayloadLimits()
        self.excerpt_chars = excerpt_chars
        self.brevity_hint = brevity_hint

    def payload(
        self,
        question: TaskQuestion,
        libraries: Mapping[str, SkillLibrary],
        rollout: Rollout,
        trace: SkillTrace,
    ) -> TrajectoryPayload:
        """The payload this critic sends for one trajectory."""
        return build_trajectory_payload(
            question,
            libraries,
            rollout,
            trace,
            limits=self.limits,
            excerpt_chars=self.excerpt_chars,
            brevity_hint=self.brevity_hint,
        )

    async def credit(
        self,
        question: TaskQuestion,
        libraries: Mapping[str, SkillLibrary],
        rollout: Rollout,
        trace: SkillTrace | None = None,
    ) -> TrajectoryCredit:
        """Credit one trajectory run under `libraries` (agents in team order); `trace`
        defaults to the rollout's skill trace."""
        trace = trace if trace is not None else build_skill_trace(rollout)
        payload = self.payload(question, libraries, rollout, trace)
        agents = list(libraries)
        messages: list[BaseMessage] = [
            SystemMessage(prompts.CRITIC_SYSTEM),
            HumanMessage(prompts.CRITIC_USER.format(payload=payload.text)),
        ]
        model = self.provider.chat("critic", max_tokens=self.max_tokens)
        schema = critique_schema(trace, agents, schema_narrowing(model))
        raw = await astructured_call(model, schema, messages)
        # Back to the plain models: the narrowed subclasses only shape the advertised schema.
        output = TrajectoryCritique.model_validate(raw.model_dump())
        credits, dropped = usable_credits(output.credits, libraries)
        return TrajectoryCredit(
            credits=credits,
            residuals=usable_residuals(output.residuals, agents),
            dropped_credits=dropped,
            uncredited=uncredited_pairs(trace, credits),
            payload_chars=payload.size_chars,
        )
