"""What one team execution produced: steps, final answer, reward. Written to and read from disk."""

from __future__ import annotations

from pydantic import BaseModel, Field

from grse_graph.counts import Counts


class ToolCallRecord(BaseModel):
    """One tool call an agent made and what the tool returned."""

    name: str
    arguments: dict[str, object] = Field(default_factory=dict)
    result: str = ""
    error: str | None = None


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
