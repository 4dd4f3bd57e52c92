"""The state a team graph carries: the question, each agent's output and the recorded steps."""

from __future__ import annotations

import operator
from typing import Annotated

from pydantic import BaseModel, Field

from grse_graph.tasks.base import TaskQuestion

from .agent import PresampledReply
from .kinds import QuestionKind
from .rollout import Step


def merge_outputs(left: dict[str, str], right: dict[str, str]) -> dict[str, str]:
    """Reducer: later agents add their outputs; an agent that runs again replaces its own."""
    return {**left, **right}


class TeamState(BaseModel):
    """State of one team execution.

    `kind` is decided once per question (passages or conversation) by the first node that runs;
    `answer` is written by the agent that gives the team's final answer. `opening`, when set,
    is the first agent's first reply, sampled once for a group (`sample_first_replies`).
    `replay` holds the steps of an earlier greedy execution of the same question: an agent
    turn whose prompt (system prompt and input) equals the recorded step at its position
    returns that step instead of calling the model (`reusable_step`).
    """

    question: TaskQuestion
    kind: QuestionKind | None = None
    outputs: Annotated[dict[str, str], merge_outputs] = Field(default_factory=dict)
    steps: Annotated[list[Step], operator.add] = Field(default_factory=list)
    answer: str = ""
    opening: PresampledReply | None = None
    replay: list[Step] = Field(default_factory=list)
