"""Values an evaluation run writes: per-question predictions, the run config and the summary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from grse_graph.team.rollout import Rollout

AnswerStateName = Literal["declined", "correct", "wrong"]


class PredictionRecord(BaseModel):
    """One finished question: one line of `predictions.jsonl`.

    A failed question has `failed=True`, the error text, an empty prediction and no metrics; it
    counts as 0 in every average.
    """

    id: str
    question: str
    answer: str
    prediction: str = ""
    category: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    reward: float = 0.0
    state: AnswerStateName | None = None
    failed: bool = False
    error: str | None = None
    latency_s: float = 0.0
    rollout: Rollout | None = None
    # The LangSmith trace of this question (see `answer_question`); None when unknown.
    trace_id: str | None = None


class RunConfig(BaseModel):
    """`run.json`: what the folder holds results of. A resume must ask for the same run."""

    task: str
    split: str
    method: str
    method_config: dict[str, Any] = Field(default_factory=dict)
    data: str | None = None
    # The task's category labels (e.g. ["temporal"] for `--category temporal`); None in folders
    # written before categories were recorded.
    categories: list[str] | None = None
    # Which model answered (e.g. "embedded:default" or "http://host/v1 qwen2.5-7b"); a resume
    # with another model would mix results.
    model: str | None = None


class GroupSummary(BaseModel):
    """Averages over a set of finished questions (failed ones count as 0)."""

    count: int
    failed: int
    reward: float
    metrics: dict[str, float]
    # Shares of finished questions in each answer state, plus "failed".
    states: dict[str, float]
    cited_answers: int = Field(
        default=0,
        description="answers carrying a dialogue-id citation; scored as they are, as the "
        "official LoCoMo scorer scores them",
    )
    evidence_citation_rate: float | None = Field(
        default=None,
        description="conversation tasks: share of executions whose first agent's hand-off "
        "cites a dialogue id [D<session>:<turn>] (metrics.evidence_citation_rate)",
    )


class CategoryAverage(BaseModel):
    """The paper's Avg. column: each metric and the reward averaged over the categories (each
    category weighs the same, whatever its number of questions)."""

    categories: int
    reward: float
    metrics: dict[str, float]


class EvalSummary(BaseModel):
    """`summary.json`: overall and per-category results of an evaluation folder."""

    task: str
    split: str
    method: str
    questions: int
    finished: int
    failed: int
    overall: GroupSummary
    per_category: dict[str, GroupSummary] = Field(default_factory=dict)
    category_average: CategoryAverage | None = Field(
        default=None, description="Avg. over the categories (two or more categories only)"
    )
    elapsed_s: float = Field(default=0.0, description="wall time over every session of the folder")
    out_dir: str = ""
