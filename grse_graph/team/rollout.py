"""What one team execution produced: steps, final answer, reward. Written to and read from disk."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from grse_graph.counts import Counts


class ToolCallRecord(BaseModel):
    """One tool call an agent made and what the tool returned."""

    name: str
    arguments: dict[str, object] = Field(default_factory=dict)
    result: str = ""
    error: str | None = None


CallEventKind = Literal[
    "unclosed", "empty", "nested", "unopened", "invalid_argument", "over_budget"
]
"""What went wrong with a tool call an agent wrote as text (`grse_graph.team.tag_calls`):
an opening tag never closed, nothing between the tags, a tag inside a call, a closing tag
without its opening one, an argument the tool cannot read as meant (a grep pattern that is not
a valid regular expression: it is run as plain text), or a call beyond the turn's budget (not
run)."""


class CallEvent(BaseModel):
    """One problem with a written tool call, told to the agent and counted (`Step.call_events`)."""

    kind: CallEventKind
    tool: str
    text: str = Field(description="the call as the agent wrote it (cut to a few hundred chars)")


class ModelCallTokens(Counts):
    """Model calls and their tokens."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    model_calls: int = 0


class StepUsage(ModelCallTokens):
    """Tokens and latency of the model calls inside one step."""

    latency_s: float = 0.0


class Step(BaseModel):
    """One agent's turn in a rollout.

    `input_ref` names shared text (for example the passages of the question) that the rendered
    input contained, so the critic payload can carry that text once instead of in every step.
    """

    index: int
    agent: str
    system_prompt: str
    input: str
    input_ref: str | None = None
    output: str
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    skills_present: list[str] = Field(default_factory=list)
    skills_invoked: list[str] = Field(default_factory=list)
    # The library the agent could load skills from (`AgentTurnInput.skills_hash`); None when
    # its skills were all in the system prompt, or in records written before it was kept.
    skills_hash: str | None = None
    usage: StepUsage = Field(default_factory=StepUsage)
    # Problems with the tool calls the agent wrote as text (the ``text`` tool protocol): each is
    # also in `tool_calls` as a call with an error, or (invalid_argument) a call that ran.
    call_events: list[CallEvent] = Field(default_factory=list)
    # True when the step was taken from an earlier greedy execution (`TeamState.replay`)
    # instead of calling the model: its usage is that execution's, not paid again.
    reused: bool = False


class Rollout(BaseModel):
    """One complete team execution for one question."""

    rollout_id: str
    question_id: str
    group_index: int = 0
    seed: int | None = None
    steps: list[Step] = Field(default_factory=list)
    answer: str = ""
    reward: float = 0.0
    metrics: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    # Where the execution is in LangSmith (`grse_graph.tracing`); None in older records.
    trace_id: str | None = None
    run_id: str | None = None

    @property
    def failed(self) -> bool:
        """True when the execution itself raised (distinct from a wrong answer)."""
        return self.error is not None

    def steps_of(self, agent: str) -> list[Step]:
        """The steps taken by one agent, in order."""
        return [s for s in self.steps if s.agent == agent]
