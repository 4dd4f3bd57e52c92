"""The task protocol: questions, splits, agent tools, rendering, reward and metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

TaskKind = Literal["passages", "conversation", "mixed"]
SPLIT_NAMES: tuple[str, ...] = ("train", "validation", "test")


class Passage(BaseModel):
    """A titled passage (HotpotQA-style context). `title` may be empty for untitled text."""

    model_config = ConfigDict(frozen=True)

    title: str
    sentences: list[str]


class TaskQuestion(BaseModel):
    """One question of a task, independent of how it is rendered to agents.

    `context` carries task-specific keys; the built-ins use:
    `conversation_id` (the conversation the grep tool searches), `speakers` (its two speaker
    names), `locomo_category` (LoCoMo category number 1-4, used for scoring),
    `metric` (which scorer a question of a mixed task uses) and `supporting_titles`.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    answer: str
    category: str | None = None
    passages: list[Passage] = Field(default_factory=list)
    # Free-form extra context (e.g. the id of the LoCoMo conversation the grep tool searches).
    context: dict[str, Any] = Field(default_factory=dict)


class ScoredAnswer(BaseModel):
    """Reward and reported metrics of one prediction."""

    reward: float = Field(ge=0.0, le=1.0)
    metrics: dict[str, float]


@runtime_checkable
class Task(Protocol):
    """What the harness needs from a task.

    `splits()` maps split names (train / validation / test) to questions; `split(name)` returns
    one split and raises `TaskError` for an unknown or empty split. `agent_tools` gives the tools
    the agent at a position of the team may use for a question (fresh per rollout, so
    per-rollout limits such as LoCoMo's 3 grep calls are enforced); `render_input` is the text
    the first agent sees; `render_full_context` is the whole context of the question (all
    passages, or the whole conversation for the LoCoMo full-context baseline); `score` returns
    the training reward and the reported metrics.

    `kind` says what the questions carry ("passages", "conversation" or "mixed") and
    `categories` lists the category labels the questions use, in report order.
    """

    name: str
    kind: TaskKind
    categories: list[str]

    def splits(self) -> Mapping[str, Sequence[TaskQuestion]]: ...

    def split(self, name: str) -> Sequence[TaskQuestion]: ...

    def render_input(self, question: TaskQuestion) -> str: ...

    def render_full_context(self, question: TaskQuestion) -> str: ...

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]: ...

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer: ...
