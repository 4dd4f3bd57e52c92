"""The pydantic records a training run writes to its run folder (one JSONL line each).

Credit records are typed by the method that wrote them (`grse_graph.methods.base.CreditRecord`
and its subclasses, e.g. GRSE's `CritiqueRecord`); the rest are the same for every method.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from grse_graph.methods.gate import GateDecision
from grse_graph.methods.operators.schema import OperatorRecord
from grse_graph.methods.plan import AggregationResult
from grse_graph.probes import ProbeResult
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


class ProbeRecord(BaseModel):
    """The probe of one iteration's base libraries (probe credit on): each skill's measured
    effect and the probe's cost."""

    iteration: int
    result: ProbeResult


class ProposedLibraries(BaseModel):
    """The complete next libraries a method's round update proposed: the changed and added
    agents' libraries saved as candidates, and the agents it removes from the team."""

    candidates: dict[str, str] = Field(default_factory=dict)
    hashes: dict[str, str] = Field(default_factory=dict)
    removed: list[str] = Field(default_factory=list)


class AggregateRecord(BaseModel):
    """The round update of one iteration: its credit records aggregated into edit directions
    and induction evidence (the plan); for a method with state, the state the commit stage
    commits; a method's own score for the round and the libraries it proposed itself (None:
    the shared operators propose the candidates)."""

    iteration: int
    result: AggregationResult
    state: dict[str, Any] | None = None
    score: float | None = None
    proposed: ProposedLibraries | None = None


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
    """The candidate libraries of an iteration (changed and added agents only), from the
    shared operators or the method's own round update; `removed`: the agents that update takes
    out of the team."""

    iteration: int
    candidates: dict[str, str]
    hashes: dict[str, str]
    removed: list[str] = Field(default_factory=list)


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


class MethodStateRecord(BaseModel):
    """A method's state after iteration `iteration` (only methods with a `state_type`)."""

    iteration: int
    method: str
    state: dict[str, Any]
