"""Typed values of the evolution operators: what the optimizer fills and what an operator did."""

from __future__ import annotations

import html
from typing import Literal

from pydantic import BaseModel, Field, computed_field, field_validator

from grse_graph.methods.operators.memorisation import MemorisationFinding
from grse_graph.skills import SkillLibrary

EditOp = Literal["replace", "insert_after", "insert_before", "delete"]
OperatorName = Literal["refine", "induce", "consolidate", "prune"]


def plain_text(value: str) -> str:
    """`value` with HTML entities decoded. The embedded Qwen models write `&lt;short
    answer&gt;` for `<short answer>` inside JSON strings (seen in every skill the 0.5B and
    1.5B optimizers drafted on the demo); a skill is plain markdown that an agent reads raw,
    and an anchor must match the body's own characters."""
    return html.unescape(value)


class AnchoredEdit(BaseModel):
    """One edit to a skill body, located by an anchor: text that must occur exactly once."""

    op: EditOp
    anchor: str = Field(description="exact text copied from the body, occurring once")
    text: str = Field(description="new text; empty for delete")

    _plain = field_validator("anchor", "text")(plain_text)


class RefineEdits(BaseModel):
    """What the optimizer returns for refine: anchored edits to one skill body."""

    edits: list[AnchoredEdit]


class SkillDraft(BaseModel):
    """What the optimizer returns for induce and consolidate: a new skill."""

    name: str = Field(description="short lowercase-hyphenated name")
    description: str = Field(description="what it does and when to use it, one sentence")
    body: str = Field(description="markdown instructions")

    _plain = field_validator("name", "description", "body")(plain_text)


class SkippedEdit(BaseModel):
    """An anchored edit that was not applied, with the reason."""

    edit: AnchoredEdit
    reason: str


class OperatorEvidence(BaseModel):
    """Why an operator acted: the credit, support and utility evidence behind it."""

    verdict: str | None = None
    utility: float | None = None
    n_credits: int = 0
    support: int = 0
    failure_type: str | None = None
    question_ids: list[str] = Field(default_factory=list)
    summary: str = ""


class OperatorRecord(BaseModel):
    """What one operator application changed (or declined to change) and why."""

    operator: OperatorName
    agent: str
    iteration: int
    skills: list[str] = Field(default_factory=list, description="skill names touched")
    created: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    before_hash: str
    after_hash: str
    changed: bool
    reason: str
    evidence: OperatorEvidence = Field(default_factory=OperatorEvidence)
    applied_edits: list[AnchoredEdit] = Field(default_factory=list)
    skipped_edits: list[SkippedEdit] = Field(default_factory=list)
    truncated: bool = False
    skipped_reason: str | None = None
    # Set when the memorisation check rejected the drafted body (or the refinement's new text).
    memorisation: MemorisationFinding | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def n_skipped(self) -> int:
        """How many anchored edits were skipped."""
        return len(self.skipped_edits)


class EvolutionResult(BaseModel):
    """Candidate libraries of one iteration and the records of every operator application.

    `candidates` holds a library for every agent (unchanged ones included); `changed_agents`
    lists the agents whose library content changed (by content hash; bookkeeping such as the
    recorded utility does not count), i.e. the agents the gate has to test.
    """

    iteration: int
    operators: list[OperatorName] = Field(default_factory=list)
    candidates: dict[str, SkillLibrary]
    records: list[OperatorRecord] = Field(default_factory=list)
    changed_agents: list[str] = Field(default_factory=list)
