"""The plan contract every credit method produces and the operators consume (method-neutral).

A credit method turns an iteration's credit records into one `AggregationResult`: edit
directions per (agent, skill) and induction evidence (patterns of diagnosed failures and agent
feedback). The credit-level values the methods share (`SkillCredit`, `AgentFeedback`,
`FailureDiagnosis`) live here too, because aggregation, induction and the report read them.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

Verdict = Literal["helped", "redundant", "harmful", "neutral"]
FailureType = Literal[
    "skill_not_followed",
    "skill_defect",
    "missing_capability",
    "handoff_error",
    "evidence_missing",
    "answer_format",
    "tool_failure",
    "uncertain_attribution",
]
Action = Literal["refine", "induce", "no_edit"]
DirectionVerdict = Literal["keep", "refine", "redundant", "low_utility"]

FAILURE_TYPES: tuple[FailureType, ...] = get_args(FailureType)

_NONE_WORDS = frozenset({"", "none", "null", "n/a", "na", "-"})


def _none_if_blank(value: object) -> object:
    # Small models write "none"/"null"/"" for "no skill"; all mean the same thing.
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in _NONE_WORDS:
        return None
    return value.strip() if isinstance(value, str) else value


# --- credit-level values ----------------------------------------------------------------------


class SkillCredit(BaseModel):
    """The critic's credit for one (agent, skill) pair on one question."""

    agent: str = Field(description="agent that owns the skill")
    skill_id: str = Field(description="skill name from that agent's library")
    evidence: str = Field(description="what in the rollouts shows this, citing r#.s#")
    verdict: Verdict
    utility: float = Field(ge=-1.0, le=1.0, description="-1 harmful .. 0 no effect .. 1 helped")
    suggested_refinement: str = Field(description="concrete change, or empty")
    redundant_with: list[str] = Field(description="overlapping skill names, or empty")
    conflicts_with: list[str] = Field(description="contradicting skill names, or empty")


class AgentFeedback(BaseModel):
    """Agent-level feedback not tied to one skill (evidence for inducing a new skill)."""

    agent: str
    feedback: str
    missing_capability: str = Field(description="capability no skill covers, or empty")


class FailureDiagnosis(BaseModel):
    """One structured failure diagnosis, citing steps as r#.s#."""

    agent: str
    skill_id: str | None = Field(description="skill at fault; null for induce")
    failure_type: FailureType
    failed_refs: list[str] = Field(description="steps of reward<1 rollouts")
    successful_refs: list[str] = Field(description="steps of reward=1 rollouts, or empty")
    explanation: str
    correction: str
    action: Action

    @field_validator("skill_id", mode="before")
    @classmethod
    def _blank_skill_is_none(cls, value: object) -> object:
        return _none_if_blank(value)


class DiagnosisCounts(BaseModel):
    """How many diagnoses were accepted, repaired, dropped; hypotheses among the kept ones."""

    accepted: int = 0
    repaired: int = 0
    dropped: int = 0
    hypothesis: int = 0

    def __add__(self, other: DiagnosisCounts) -> DiagnosisCounts:
        return DiagnosisCounts(
            accepted=self.accepted + other.accepted,
            repaired=self.repaired + other.repaired,
            dropped=self.dropped + other.dropped,
            hypothesis=self.hypothesis + other.hypothesis,
        )


# --- aggregation ------------------------------------------------------------------------------


class EditDirection(BaseModel):
    """One direction per (agent, skill) from all usable credits of the iteration."""

    agent: str
    skill_id: str
    summary: str
    suggested_edit: str = ""
    utility: float = Field(ge=-1.0, le=1.0)
    verdict: DirectionVerdict
    n_credits: int = 0
    # Mean of the credits' own utilities, for methods whose `utility` may differ from it (a
    # merge may set its own); a moving-average utility rule reads it. None: same as `utility`.
    credit_utility_mean: float | None = Field(default=None, ge=-1.0, le=1.0)
    question_ids: list[str] = Field(default_factory=list)
    redundant_with: list[str] = Field(default_factory=list)
    conflicts_with: list[str] = Field(default_factory=list)
    evidence_by_category: dict[str, list[str]] = Field(default_factory=dict)
    merged_by_model: bool = False
    # Set when the optimizer's merge output was unusable and the rule-based merge was used.
    merge_error: str | None = None


class OutputContrast(BaseModel):
    """How the diagnosed agent's output ended in a failed run and in a successful run of the
    same group: the group comparison itself, shown to the optimizer beside the critic's words
    (a small critic's explanation is often too vague to act on: "the retriever did not
    provide the correct answer")."""

    failed: str
    successful: str = ""
    failed_calls: list[str] = Field(default_factory=list)

    def text(self) -> str:
        """One prompt clause per part: the failed run's tool calls (a search that matched
        nothing shows its query), how its output ended, and how a successful run's ended."""
        parts = []
        if self.failed_calls:
            parts.append(f"Its tool calls in a failed run: {'; '.join(self.failed_calls)}.")
        ended = f'Its output in a failed run ended: "{self.failed}"'
        if self.successful:
            ended += f'; in a successful run: "{self.successful}"'
        return " ".join([*parts, ended])


class PatternExample(BaseModel):
    """One diagnosis supporting an induction pattern, with the question it came from."""

    question_id: str
    category: str | None = None
    diagnosis: FailureDiagnosis
    is_hypothesis: bool = False
    contrast: OutputContrast | None = None


class InductionPattern(BaseModel):
    """A recurring (agent, failure_type, skill_id, action) with its support.

    `support` is the number of distinct questions with an accepted or repaired diagnosis of
    this pattern (several rollouts or diagnoses of one question count once).
    """

    agent: str
    failure_type: FailureType
    skill_id: str | None = None
    action: Action
    support: int
    question_ids: list[str] = Field(default_factory=list)
    examples: list[PatternExample] = Field(default_factory=list)
    evidence_by_category: dict[str, list[str]] = Field(default_factory=dict)


class AgentEvidence(BaseModel):
    """Agent-level feedback gathered across questions (induction evidence not tied to a skill)."""

    agent: str
    items: list[str] = Field(default_factory=list)
    missing_capabilities: list[str] = Field(default_factory=list)
    question_ids: list[str] = Field(default_factory=list)
    evidence_by_category: dict[str, list[str]] = Field(default_factory=dict)
    # Evidence lines from low-reward trajectories, apart from the feedback (MASkills' hard
    # cases: reward plus that agent's residual); empty for GRSE.
    hard_cases: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def support(self) -> int:
        """Distinct questions the feedback came from."""
        return len(self.question_ids)


class SkillLink(BaseModel):
    """A pair of one agent's skills the critic reported as redundant with, or conflicting with,
    each other, and the iteration it was reported in."""

    model_config = ConfigDict(frozen=True)

    agent: str
    skill_id: str
    other: str
    kind: Literal["redundant", "conflicts"]
    iteration: int


class ProbeEvidence(BaseModel):
    """A skill's effect measured by execution (`grse_graph.probes`) beside the critic's credit,
    and which of the two set the skill's direction."""

    agent: str
    skill_id: str
    effect: float | None
    low: float | None = None
    high: float | None = None
    questions: int = 0
    verdict: Literal["helps", "hurts", "no effect"]
    # The critic's aggregated utility for the skill before the probe was read (None: silent).
    critic_utility: float | None = None
    critic_verdict: DirectionVerdict | None = None
    # The critic credited the skill with the opposite sign of a reliable measured effect.
    contradicts: bool = False
    decided_by: Literal["probe", "critic", "none"] = "none"


class AggregationResult(BaseModel):
    """Edit directions, induction patterns and agent feedback of one iteration."""

    directions: list[EditDirection] = Field(default_factory=list)
    patterns: list[InductionPattern] = Field(default_factory=list)
    agent_evidence: list[AgentEvidence] = Field(default_factory=list)
    counts: DiagnosisCounts = Field(default_factory=DiagnosisCounts)
    question_ids: list[str] = Field(default_factory=list)
    with_labels: bool = False
    structured: bool = True
    optimizer_calls: int = 0
    # Credit suggestions dropped because no accepted refine diagnosis of their question
    # supports them (GRSE: refinements come from checked diagnoses, §3.2).
    unattributed_refinements: int = 0
    # Links reported in the iterations since the last consolidation (GRSE consolidates every
    # 2nd iteration; links seen in between are not lost).
    carried_links: list[SkillLink] = Field(default_factory=list)
    # Per agent, how often each skill was used (or exposed, for exposure-based methods) this
    # iteration; added to the skills' cumulative counts by `methods.utility.bookkeeping`.
    invocations: dict[str, dict[str, int]] = Field(default_factory=dict)
    # With probe credit on: every probed skill's measured effect and how it entered the plan.
    probe_evidence: list[ProbeEvidence] = Field(default_factory=list)

    def direction(self, agent: str, skill_id: str) -> EditDirection | None:
        """The direction of one (agent, skill), if any credit named it."""
        for d in self.directions:
            if d.agent == agent and d.skill_id == skill_id:
                return d
        return None


class MergedDirection(BaseModel):
    """What the optimizer returns when several credits of one skill are merged."""

    summary: str
    suggested_edit: str = Field(description="one concrete change, or empty")
    verdict: DirectionVerdict
