"""The code's tool-using Error Analyst loop (spec §4.2 `runFailureAnalystLoop`, §9.2 row 14's
option): at most six turns at temperature 0.1, a tool call on every turn, read-only evidence
tools and one submit tool.

Unlike the generic code, CompareAnswer is a real comparison (training questions carry their
gold answer), and ReadAgentBoundary answers with the role, targets and boundary note the code's
controller never filled. A submission failing the schema or the code's validity checks is
answered with its problems and the loop goes on; no valid submission within the budget means
no analysis (tag none), as the analyst prompt says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field, ValidationError

from grse_graph.errors import ModelRequestRefused
from grse_graph.team.agent import replayable
from grse_graph.validation_text import describe_validation_error

from .diagnosis import (
    AnalystEvidence,
    ClusterAnalysis,
    Diagnosis,
    FailureCluster,
    analyst_model,
    checked,
    clip,
    unanalysed,
    validity_problems,
)
from .team import TeamMember
from .trace import VerifiedTrace

MAX_TURNS = 6
MAX_SUCCESS_EXEMPLARS = 3
RESULT_CHARS = 2400


class ListEvidence(BaseModel):
    """List the cluster's failures (F1, F2, ...) and matched successes (S1, ...)."""


class ReadTrace(BaseModel):
    """Read the full action trace of one episode and every agent's output."""

    ref: str = Field(description="an episode reference such as F1 or S2")


class ReadEpisode(BaseModel):
    """Read one episode's question (input) and final answer (output)."""

    ref: str = Field(description="an episode reference such as F1 or S2")


class CompareAnswer(BaseModel):
    """Compare one episode's answer with the ground truth (gold answer, F1, answer state)."""

    ref: str = Field(description="an episode reference such as F1 or S2")


class ReadSkillBoundary(BaseModel):
    """Read a skill's applicability (description) and body."""

    skill: str = Field(description="agent/skill-name, as listed in the evidence")


class ReadAgentBoundary(BaseModel):
    """Read an agent's role, the task types it runs for and its boundary note."""

    agent: str = Field(description="an agent name of the team")


class SubmitAnalysis(ClusterAnalysis):
    """Submit the final analysis of the cluster (ends the investigation when it is valid)."""


LOOP_SYSTEM = """You are the error analyst of a question-answering agent team.
Investigate a cluster of failed episodes of one question type THROUGH THE TOOLS: every turn
must call a tool. Read traces, compare answers with the ground truth and read the boundaries
of the skills and agents involved, then call SubmitAnalysis with a concrete root cause, the
fix and evidence references (failure numbers: F1 = 1). Name ONE dominant cause: missing
precondition, incorrect action order, misleading retrieval match, skill conflict, bad executor
assignment, or other. Set unique=true only if this one cause explains every failure. Tag the
repair: add-guard (missing precondition), reorder-step (incorrect action order),
tighten-retrieval (misleading retrieval match), split-skill (skill conflict),
handoff-to-structure (bad executor assignment), none. You have at most {turns} turns. If the
evidence does not show a cause, do not invent one: submit cause other with tag none."""


@dataclass(frozen=True)
class ToolLoopAnalyst:
    """The analyst loop over one round's evidence (a `ClusterAnalyst`)."""

    evidence: AnalystEvidence
    successes: Sequence[VerifiedTrace] = ()
    agent_boundaries: Mapping[str, str] | None = None
    max_tokens: int | None = None
    max_turns: int = MAX_TURNS

    def episodes(self, cluster: FailureCluster) -> dict[str, VerifiedTrace]:
        """F1.. for the failures, S1.. for up to three matched successes of the task type."""
        refs = {f"F{n}": t for n, t in enumerate(cluster.failures, start=1)}
        matched = [t for t in self.successes if t.task_type == cluster.task_type]
        refs.update({f"S{n}": t for n, t in enumerate(matched[:MAX_SUCCESS_EXEMPLARS], 1)})
        return refs

    def overview(self, cluster: FailureCluster, refs: Mapping[str, VerifiedTrace]) -> str:
        lines = [
            f"Question type: {cluster.task_type}",
            f"Cluster: {cluster.key} ({cluster.selection_reason}, {cluster.tier})",
            f"Agents: {', '.join(cluster.agents) or '-'}; skills used: "
            f"{', '.join(cluster.skills) or 'none'}",
            "Episodes:",
            *(f"{ref}: {t.summary}" for ref, t in refs.items()),
        ]
        return "\n".join(lines)

    def run_tool(
        self, name: str, args: Mapping[str, Any], refs: Mapping[str, VerifiedTrace]
    ) -> str:
        """The answer of one read-only tool (an explanation when the arguments name nothing)."""
        ref = str(args.get("ref", ""))

        def on_episode(read: Callable[[VerifiedTrace], str]) -> str:
            trace = refs.get(ref.strip().upper())
            if trace is None:
                return f"no episode {ref!r}; known: {', '.join(refs)}"
            return read(trace)

        tools: dict[str, Callable[[], str]] = {
            "ListEvidence": lambda: "\n".join(
                f"{r}: {'success' if t.success else t.error_message} | {t.summary}"
                for r, t in refs.items()
            ),
            "ReadTrace": lambda: on_episode(self._trace),
            "ReadEpisode": lambda: on_episode(self._episode),
            "CompareAnswer": lambda: on_episode(self._compare),
            "ReadSkillBoundary": lambda: self._skill(str(args.get("skill", ""))),
            "ReadAgentBoundary": lambda: self._agent(str(args.get("agent", ""))),
        }
        if name not in tools:
            return f"unknown tool {name!r}"
        return clip(tools[name](), RESULT_CHARS)

    def _trace(self, trace: VerifiedTrace) -> str:
        rollout = self.evidence.rollouts.get(trace.rollout_id)
        lines = list(trace.action_trace)
        for step in rollout.steps if rollout else []:
            lines.append(f"{step.agent} said: {clip(step.output, 600)}")
        return "\n".join(lines) or "empty trace"

    def _episode(self, trace: VerifiedTrace) -> str:
        rollout = self.evidence.rollouts.get(trace.rollout_id)
        answer = rollout.answer if rollout else "?"
        return f"input: {trace.task}\noutput (final answer): {answer}"

    def _compare(self, trace: VerifiedTrace) -> str:
        rollout = self.evidence.rollouts.get(trace.rollout_id)
        return (
            f"gold answer: {self.evidence.gold.get(trace.question_id, '?')}\n"
            f"prediction: {rollout.answer if rollout else '?'}\n"
            f"F1 {trace.score if trace.score is not None else '?'}; "
            f"state: {trace.error_message or 'correct'}"
        )

    def _skill(self, ref: str) -> str:
        agent, _, name = ref.partition("/")
        libraries = self.evidence.libraries
        library = libraries.get(agent)
        if library is None or not library.has(name):
            known = [f"{a}/{n}" for a, lib in libraries.items() for n in lib.names()]
            return f"no skill {ref!r}; known: {', '.join(known) or 'none'}"
        skill = library.get(name)
        return f"description: {skill.description}\n{skill.body}"

    def _agent(self, agent: str) -> str:
        boundaries = self.agent_boundaries or {}
        if agent not in boundaries:
            return f"no agent {agent!r}; known: {', '.join(boundaries) or 'none'}"
        return boundaries[agent]

    async def analyse(self, cluster: FailureCluster) -> Diagnosis:
        refs = self.episodes(cluster)
        model = analyst_model(self.evidence.provider, self.max_tokens).bind_tools(
            [
                ListEvidence,
                ReadTrace,
                ReadEpisode,
                CompareAnswer,
                ReadSkillBoundary,
                ReadAgentBoundary,
                SubmitAnalysis,
            ]
        )
        messages: list[BaseMessage] = [
            SystemMessage(LOOP_SYSTEM.format(turns=self.max_turns)),
            HumanMessage(self.overview(cluster, refs)),
        ]
        called: list[str] = []
        last_problem = "no submission"
        for turn in range(1, self.max_turns + 1):
            try:
                reply = await model.ainvoke(messages)
            except ModelRequestRefused as failure:
                why = f"{type(failure).__name__}: {failure}"
                return unanalysed(cluster, why, turns=turn, tools_called=called)
            if not isinstance(reply, AIMessage):
                raise TypeError(f"analyst model returned {type(reply).__name__}, not AIMessage")
            # An empty content goes back as one space (llama-cpp-python rejects a null one).
            messages.append(replayable(reply))
            if not reply.tool_calls:
                messages.append(HumanMessage("Every turn must call a tool: investigate or submit."))
                last_problem = "a turn without a tool call"
                continue
            for call in reply.tool_calls:
                name, args, call_id = call["name"], call.get("args") or {}, call.get("id") or ""
                called.append(name)
                if name != "SubmitAnalysis":
                    answer = self.run_tool(name, args, refs)
                    messages.append(ToolMessage(content=answer, tool_call_id=call_id))
                    continue
                try:
                    analysis = ClusterAnalysis.model_validate(args)
                except ValidationError as error:
                    problems = [describe_validation_error(error)]
                else:
                    problems = validity_problems(analysis, len(cluster.failures))
                    if not problems:
                        return checked(cluster, analysis, turns=turn, tools_called=called)
                last_problem = "; ".join(problems)
                messages.append(
                    ToolMessage(
                        content=f"submission rejected: {last_problem}. Fix it and submit again.",
                        tool_call_id=call_id,
                    )
                )
        why = f"no valid submission within {self.max_turns} turns ({last_problem})"
        return unanalysed(cluster, why, turns=self.max_turns, tools_called=called)


def agent_boundaries(
    members: Sequence[TeamMember], seed_roles: Mapping[str, str]
) -> dict[str, str]:
    """What the analyst's agent-boundary tool answers: role, task types, boundary note."""
    out = {}
    for m in members:
        role = seed_roles.get(m.name, "") if m.seed else m.role
        runs = "every question" if m.seed or not m.targets else ", ".join(m.targets)
        where = f"; routed in place of {m.slot}" if m.slot else ""
        note = f"\n{m.boundary}" if m.boundary else ""
        out[m.name] = f"role: {role or '-'}\nruns for: {runs}{where}{note}"
    return out
