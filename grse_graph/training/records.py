"""The pydantic records a training run writes to its run folder (one JSONL line each)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from grse_graph.methods.grse.schema import (
    AggregationResult,
    CritiqueResult,
    GateDecision,
    OperatorRecord,
)
from grse_graph.team.agent import PresampledReply
from grse_graph.team.rollout import Rollout


class RolloutRecord(BaseModel):
    """One training rollout: question `group_index` of iteration `iteration`'s batch."""

    iteration: int
    unit_id: str
    question_id: str
    group_index: int
    seed: int | None
    library_hashes: dict[str, str]
    rollout: Rollout


class OpeningRecord(BaseModel):
    """The first agent's first replies for one question's group, from one call with `n` =
    `requested` choices. Fewer `replies` than requested means the server ignored `n`; rollout
    g uses reply g when there is one and makes its own call otherwise."""

    iteration: int
    unit_id: str
    question_id: str
    requested: int
    library_hashes: dict[str, str]
    replies: list[PresampledReply]


class CritiqueRecord(BaseModel):
    """One question's group: rewards, advantages and the critic's checked output.

    `result` is None when the group was not sent to the critic (`kept` False: DAPO filter) or
    when the critic's output could not be parsed even after its repair round (`error` says why;
    the question then contributes no evidence, and the report counts it).
    """

    iteration: int
    unit_id: str
    question_id: str
    rollout_ids: list[str]
    rewards: list[float]
    advantages: list[float]
    kept: bool
    result: CritiqueResult | None = None
    error: str | None = None


class AggregateRecord(BaseModel):
    """The aggregation of one iteration's critiques into edit directions and patterns."""

    iteration: int
    result: AggregationResult


class OperatorLine(BaseModel):
    """One operator action of an iteration (what changed and why), with its review verdict."""

    iteration: int
    record: OperatorRecord


class ReviewRecord(BaseModel):
    """A reviewer's decision on one proposed skill change (`--review`)."""

    iteration: int
    agent: str
    skill: str
    change: Literal["added", "changed", "removed"]
    verdict: Literal["accept", "reject", "edit"]
    edited_body: str | None = None


class ValidationRecord(BaseModel):
    """One validation execution: a question run under one library variant, repeat `repeat`."""

    iteration: int
    unit_id: str
    variant: str
    variant_hash: str
    question_id: str
    repeat: int
    reward: float
    rollout: Rollout


class CandidateRecord(BaseModel):
    """The candidate libraries the evolve stage proposed in an iteration (changed agents only)."""

    iteration: int
    candidates: dict[str, str]
    hashes: dict[str, str]


class GateRecord(BaseModel):
    """One iteration's gate: the base score, every decision with both scores, the outcome."""

    iteration: int
    base_score: float
    validation_questions: int
    validation_repeats: int
    decisions: list[GateDecision] = Field(default_factory=list)
    libraries_before: dict[str, str]
    libraries_after: dict[str, str]
    skills_after: dict[str, list[str]]
    library_paths: dict[str, str]
