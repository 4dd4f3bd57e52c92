"""What every operator receives: the provider, the iteration, the limit and the settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.operators.memorisation import (
    MemorisationCheck,
    MemorisationFinding,
    log_rejection,
)
from grse_graph.methods.operators.schema import (
    AnchoredEdit,
    OperatorEvidence,
    OperatorName,
    OperatorRecord,
    SkippedEdit,
)
from grse_graph.methods.operators.text import DEFAULT_BODY_TOKEN_CAP
from grse_graph.skills import SkillLibrary
from grse_graph.skills.text import approx_tokens


class OperatorSettings(BaseModel):
    """Operator knobs; defaults are the paper's generation caps (refine 800, induce and
    consolidate 1,200 tokens) and body cap (1,200 tokens)."""

    model_config = ConfigDict(frozen=True)

    refine_max_tokens: int = Field(default=800, ge=1)
    induce_max_tokens: int = Field(default=1200, ge=1)
    consolidate_max_tokens: int = Field(default=1200, ge=1)
    body_token_cap: int = Field(default=DEFAULT_BODY_TOKEN_CAP, ge=1)
    # New skills one agent may gain per iteration (each from its own best-supported pattern).
    max_new_skills_per_agent: int = Field(default=1, ge=0)
    # Patterns need at least this many distinct questions before induce acts on them.
    min_induce_support: int = Field(default=1, ge=1)
    # A skill without a direction this iteration is pruned when its recorded utility is at or
    # below this (earlier evidence survives iterations without prune in the schedule).
    prune_utility_threshold: float = Field(default=-0.5, ge=-1.0, le=1.0)
    max_evidence_examples: int = Field(default=3, ge=1)


@dataclass(frozen=True)
class OperatorContext:
    """Per-iteration inputs shared by the operators (not persisted: it holds the provider)."""

    provider: ChatModelProvider
    iteration: int
    library_limit: int | None = None
    settings: OperatorSettings = field(default_factory=OperatorSettings)
    # Per agent: its role and the task (and category) it serves, shown to the optimizer.
    agent_context: Mapping[str, str] = field(default_factory=dict)
    # Counts skill-body tokens for the body cap (None: the four-characters estimate).
    token_counter: Callable[[str], int] | None = None
    # The task's guidance for the optimizer (e.g. the LoCoMo category's, `operator_guidance`).
    task_guidance: str = ""
    # Rejects bodies that copy the run's training inputs (None: no check, e.g. in unit tests
    # of other behaviour or outside a training run).
    memorisation: MemorisationCheck | None = None

    def __post_init__(self) -> None:
        if self.iteration < 1:
            raise ValueError(f"iteration must be >= 1, got {self.iteration}")
        if self.library_limit is not None and self.library_limit < 1:
            raise ValueError(f"library limit must be >= 1, got {self.library_limit}")

    def count_tokens(self, text: str) -> int:
        """Tokens of a skill body, by the configured counter or the estimate."""
        return (self.token_counter or approx_tokens)(text)

    def context_for(self, library: SkillLibrary, exclude: Sequence[str] = ()) -> str:
        """What the optimizer is told about an agent besides the evidence: its role and task,
        and the bodies of its other skills (so a new or changed skill neither duplicates nor
        contradicts them)."""
        parts = [self.agent_context.get(library.agent, "").strip()]
        others = [s for s in library.skills if s.name not in exclude]
        if others:
            listed = "\n\n".join(f"### {s.name}: {s.description}\n{s.body.strip()}" for s in others)
            parts.append(
                "Other skills of this agent (do not duplicate or contradict them):\n" + listed
            )
        return "\n\n".join(p for p in parts if p) or "(no other context)"

    def guidance_block(self) -> str:
        """The task guidance as a prompt paragraph ('' when there is none)."""
        text = self.task_guidance.strip()
        return f"\n\nGuidance for this task: {text}" if text else ""

    def evidence_text(self, text: str) -> str:
        """Evidence as the optimizer sees it: question-specific names and numbers masked, so
        it shows the failure pattern rather than one question's content."""
        return self.memorisation.mask(text) if self.memorisation is not None else text

    def memorised(
        self,
        operator: OperatorName,
        agent: str,
        skill: str,
        text: str,
        known: Sequence[str] = (),
        shown: Sequence[str] = (),
    ) -> MemorisationFinding | None:
        """The memorisation finding of a drafted `text` (logged), or None when it passes or
        no check is configured; spans found in `known` (accepted bodies) do not count, and
        restating `shown` (the evidence in the prompt) counts like restating the role."""
        if self.memorisation is None:
            return None
        finding = self.memorisation.find(text, skill=skill, known=known, shown=shown)
        if finding is not None:
            log_rejection(operator, agent, finding)
        return finding

    def limit_of(self, library: SkillLibrary) -> int | None:
        """The effective limit L of a library: the smaller of its own and the configured one."""
        limits = [x for x in (library.limit, self.library_limit) if x is not None]
        return min(limits) if limits else None


def make_record(
    operator: OperatorName,
    ctx: OperatorContext,
    before: SkillLibrary,
    after: SkillLibrary,
    *,
    skills: Sequence[str],
    reason: str,
    evidence: OperatorEvidence,
    created: Sequence[str] = (),
    removed: Sequence[str] = (),
    applied_edits: Sequence[AnchoredEdit] = (),
    skipped_edits: Sequence[SkippedEdit] = (),
    truncated: bool = False,
    skipped_reason: str | None = None,
    memorisation: MemorisationFinding | None = None,
) -> OperatorRecord:
    """An `OperatorRecord` comparing the library before and after one operator application."""
    before_hash, after_hash = before.content_hash(), after.content_hash()
    return OperatorRecord(
        operator=operator,
        agent=before.agent,
        iteration=ctx.iteration,
        skills=list(skills),
        created=list(created),
        removed=list(removed),
        before_hash=before_hash,
        after_hash=after_hash,
        changed=before_hash != after_hash,
        reason=reason,
        evidence=evidence,
        applied_edits=list(applied_edits),
        skipped_edits=list(skipped_edits),
        truncated=truncated,
        skipped_reason=skipped_reason,
        memorisation=memorisation,
    )


def skip_record(
    operator: OperatorName,
    ctx: OperatorContext,
    library: SkillLibrary,
    *,
    skills: Sequence[str],
    reason: str,
    evidence: OperatorEvidence,
    skipped_reason: str,
    memorisation: MemorisationFinding | None = None,
) -> OperatorRecord:
    """The record of an application that left `library` unchanged, saying why."""
    return make_record(
        operator,
        ctx,
        library,
        library,
        skills=skills,
        reason=reason,
        evidence=evidence,
        skipped_reason=skipped_reason,
        memorisation=memorisation,
    )


@dataclass(frozen=True)
class Declined:
    """How one application records leaving its library unchanged: the operator, library,
    reason and evidence are fixed; each call says why (and, if other, which skills, and the
    memorisation finding)."""

    operator: OperatorName
    ctx: OperatorContext
    library: SkillLibrary
    reason: str
    evidence: OperatorEvidence
    skills: Sequence[str] = ()

    def __call__(
        self,
        why: str,
        skills: Sequence[str] | None = None,
        memorisation: MemorisationFinding | None = None,
    ) -> tuple[SkillLibrary, OperatorRecord]:
        return self.library, skip_record(
            self.operator,
            self.ctx,
            self.library,
            skills=self.skills if skills is None else skills,
            reason=self.reason,
            evidence=self.evidence,
            skipped_reason=why,
            memorisation=memorisation,
        )


OperatorOutput = tuple[dict[str, SkillLibrary], list[OperatorRecord]]
