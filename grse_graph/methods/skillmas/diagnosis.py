"""Bounded diagnosability (spec §4.2-§4.3, §9.2 row 14): the retained failures are clustered,
the clusters scored, and each of the top three non-P2 clusters diagnosed in ONE structured
critic call returning a dominant cause, its uniqueness and a repair tag.

Deterministic post-checks: u = 1 iff the code's validity checks pass, `unique` holds and the
cause is not `other`; u = 0 forces the tag `none`; `bad executor assignment` forces
`handoff-to-structure`. A tag that does not fit the cause fails the schema's check, so the
model sees the error once (the structured call's repair round); if it still does not fit, the
cluster has no diagnosis and counts as tag `none`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, model_validator

from grse_graph.errors import ModelRequestRefused, StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.llm.structured import astructured_call
from grse_graph.skills import SkillLibrary
from grse_graph.team.rollout import Rollout

from .retention import RetainedItem
from .trace import VerifiedTrace

Cause = Literal[
    "missing precondition",
    "incorrect action order",
    "misleading retrieval match",
    "skill conflict",
    "bad executor assignment",
    "other",
]
Tag = Literal[
    "add-guard", "reorder-step", "tighten-retrieval", "split-skill", "handoff-to-structure", "none"
]
LOCAL_TAGS: frozenset[str] = frozenset(
    {"add-guard", "reorder-step", "tighten-retrieval", "split-skill"}
)
TAG_OF_CAUSE: dict[str, str] = {
    "missing precondition": "add-guard",
    "incorrect action order": "reorder-step",
    "misleading retrieval match": "tighten-retrieval",
    "skill conflict": "split-skill",
    "bad executor assignment": "handoff-to-structure",
}
MAX_CLUSTERS = 3
ANALYST_TEMPERATURE = 0.1
P0, P1 = 0.70, 0.45


class FailureCluster(BaseModel):
    """Retained failures sharing task type, implicated agents and used skills."""

    key: str
    task_type: str
    agents: list[str]
    skills: list[str] = Field(description="used skills as agent/name")
    failures: list[VerifiedTrace]
    matched_successes: int
    priority: float
    tier: Literal["P0", "P1", "P2"]
    selection_reason: str


class ClusterAnalysis(BaseModel):
    """The analyst's answer for one cluster (the code's submission fields + cause/unique/tag)."""

    pattern: str = Field(description="the recurring failure pattern, one sentence")
    causal_explanation: str = Field(description="why the answers failed (>= 24 characters)")
    proposed_fix: str = Field(description="the concrete skill edit that would fix it")
    evidence_refs: list[int] = Field(description="numbers of the failures (F#) showing it")
    recommended_action: Literal["create_skill", "scale_agent", "both", "observe"]
    implicated_agents: list[str] = Field(description="agents at fault")
    implicated_skills: list[str] = Field(description="skill names at fault, or empty")
    dominant_cause: Cause
    unique: bool = Field(description="true iff exactly this one cause explains every failure")
    tag: Tag

    @model_validator(mode="after")
    def _tag_fits_cause(self) -> ClusterAnalysis:
        fitting = TAG_OF_CAUSE.get(self.dominant_cause)
        if self.dominant_cause == "bad executor assignment" or self.tag == "none":
            return self
        if fitting != self.tag:
            expected = fitting or "none"
            raise ValueError(
                f"tag {self.tag!r} does not fit cause {self.dominant_cause!r} (use {expected!r})"
            )
        return self


class Diagnosis(BaseModel):
    """One cluster's checked diagnosis (what later stages route on)."""

    cluster: str
    task_type: str
    tier: str
    priority: float
    rollout_ids: list[str]
    agents: list[str]
    skills: list[str]
    analysis: ClusterAnalysis | None = None
    error: str | None = None
    checks_failed: list[str] = Field(default_factory=list)
    unique: bool = False
    tag: Tag = "none"
    turns: int | None = Field(default=None, description="analyst loop turns (loop mode only)")
    tools_called: list[str] = Field(default_factory=list, description="loop mode: in order")

    @property
    def locally_diagnosable(self) -> bool:
        return self.unique and self.tag in LOCAL_TAGS


def cluster_failures(
    retained: Sequence[RetainedItem], traces: Sequence[VerifiedTrace]
) -> list[FailureCluster]:
    """Clusters of the retained failures, scored (spec §4.2) and sorted by priority."""
    groups: dict[str, list[VerifiedTrace]] = {}
    for item in retained:
        t = item.trace
        if t.success:
            continue
        skills = sorted(f"{a}/{s}" for a, names in t.used.items() for s in names)
        key = f"{t.task_type} :: {'|'.join(sorted(t.executors)) or 'unassigned'} :: " + (
            "|".join(skills) or "no_skills"
        )
        groups.setdefault(key, []).append(t)
    clusters = []
    for key, failures in groups.items():
        tau = failures[0].task_type
        of_type = [t for t in traces if t.task_type == tau]
        successes = [t for t in of_type if t.success]
        rate = len(successes) / len(of_type) if of_type else 0.0
        agents = sorted({a for t in failures for a in t.executors})
        skills = sorted(
            {f"{a}/{s}" for t in failures for a, names in t.used.items() for s in names}
        )
        overlap = min(1.0, 0.35 * max(0, len(skills) - 1) + (0.5 if len(agents) > 1 else 0.0))
        richness = sum(
            (
                min(1.0, len(t.action_trace) / 20)
                + (1.0 if t.error_message else 0.25)
                + (0.5 if t.summary else 0.0)
            )
            / 3
            for t in failures
        ) / len(failures)
        leverage = 1.0 if len(agents) > 1 else 0.65
        priority = (
            0.30 * (1 - rate)
            + 0.25 * (1.0 if successes else 0.35)
            + 0.20 * overlap
            + 0.15 * richness
            + 0.10 * leverage
        )
        mean_fail = sum(t.steps for t in failures) / len(failures)
        mean_success = sum(t.steps for t in successes) / len(successes) if successes else 0.0
        if len(agents) > 1:
            reason = "routing_boundary"
        elif len(skills) > 1:
            reason = "skill_overlap_conflict"
        elif successes and mean_fail <= mean_success + 2:
            reason = "near_miss"
        else:
            reason = "coverage_gap"
        tier: Literal["P0", "P1", "P2"] = (
            "P0" if priority >= P0 else "P1" if priority >= P1 else "P2"
        )
        clusters.append(
            FailureCluster(
                key=key,
                task_type=tau,
                agents=agents,
                skills=skills,
                failures=failures,
                matched_successes=len(successes),
                priority=round(priority, 4),
                tier=tier,
                selection_reason=reason,
            )
        )
    clusters.sort(key=lambda c: -c.priority)
    return clusters


def validity_problems(analysis: ClusterAnalysis, failures: int) -> list[str]:
    """The code's checks on a submission (spec §4.2)."""
    problems = []
    if not analysis.pattern.strip():
        problems.append("empty pattern")
    if len(analysis.causal_explanation.strip()) < 24:
        problems.append("causal explanation under 24 characters")
    if len(analysis.proposed_fix.strip()) < 16:
        problems.append("proposed fix under 16 characters")
    if not any(1 <= r <= failures for r in analysis.evidence_refs):
        problems.append("no evidence reference to a listed failure")
    if analysis.recommended_action == "observe":
        problems.append("recommended action is observe")
    if not analysis.implicated_agents and not analysis.implicated_skills:
        problems.append("no implicated agent or skill")
    return problems


def checked(cluster: FailureCluster, analysis: ClusterAnalysis, **loop: Any) -> Diagnosis:
    """u and b from the analysis and the deterministic post-checks (`loop`: the analyst loop's
    turns and tools called)."""
    problems = validity_problems(analysis, len(cluster.failures))
    unique = not problems and analysis.unique and analysis.dominant_cause != "other"
    tag: Tag = analysis.tag if unique else "none"
    if analysis.dominant_cause == "bad executor assignment":
        tag = "handoff-to-structure"
    return unanalysed(
        cluster, None, analysis=analysis, checks_failed=problems, unique=unique, tag=tag, **loop
    )


def unanalysed(cluster: FailureCluster, error: str | None, **outcome: Any) -> Diagnosis:
    """A diagnosis of `cluster` without a valid analysis (tag none) and why; `outcome` adds
    what an analysis gave."""
    return Diagnosis(
        cluster=cluster.key,
        task_type=cluster.task_type,
        tier=cluster.tier,
        priority=cluster.priority,
        rollout_ids=[t.rollout_id for t in cluster.failures],
        agents=cluster.agents,
        skills=cluster.skills,
        error=error,
        **outcome,
    )


ANALYST_SYSTEM = """You are the error analyst of a question-answering agent team.
You get a cluster of failed episodes of one question type: the question, the gold answer, each
agent's output and tool calls, the F1 score, and the bodies of the skills the agents used.
Name ONE dominant cause from: missing precondition, incorrect action order, misleading
retrieval match, skill conflict, bad executor assignment, other. Set unique=true only if this
one cause explains every listed failure. Tag the repair: add-guard (missing precondition),
reorder-step (incorrect action order), tighten-retrieval (misleading retrieval match),
split-skill (skill conflict), handoff-to-structure (bad executor assignment: the team's
structure, not a skill, is at fault), none (no bounded edit). Cite failures as numbers (F1 = 1).
Do not invent a cause: if the evidence does not show one, use other and none."""


def clip(text: str, limit: int) -> str:
    flat = text.strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def analyst_prompt(
    cluster: FailureCluster,
    rollouts: Mapping[str, Rollout],
    gold: Mapping[str, str],
    libraries: Mapping[str, SkillLibrary],
) -> str:
    """The evidence of one cluster as the analyst sees it."""
    lines = [
        f"Question type: {cluster.task_type}",
        f"Cluster: {cluster.key} ({cluster.selection_reason}, {cluster.tier}, "
        f"{cluster.matched_successes} successes of this type this round)",
        "",
    ]
    for n, trace in enumerate(cluster.failures, start=1):
        lines.append(f"F{n}: {trace.summary}")
        lines.append(
            f"    gold answer: {gold.get(trace.question_id, '?')}; state: {trace.error_message}"
        )
        rollout = rollouts.get(trace.rollout_id)
        for step in rollout.steps if rollout else []:
            for call in step.tool_calls:
                lines.append(
                    f"    {step.agent} > {call.name}({call.arguments}) -> {clip(call.result, 200)}"
                )
            lines.append(f"    {step.agent} said: {clip(step.output, 600)}")
        lines.append("")
    if cluster.skills:
        lines.append("Skills used in these failures:")
        for ref in cluster.skills:
            agent, _, name = ref.partition("/")
            library = libraries.get(agent)
            if library is not None and library.has(name):
                lines.append(f"### {ref}\n{clip(library.get(name).body, 1200)}")
    else:
        lines.append("No skill was used in these failures.")
    return "\n".join(lines)


class ClusterAnalyst(Protocol):
    """Diagnoses one failure cluster (a seam: one structured call, or the tool loop)."""

    async def analyse(self, cluster: FailureCluster) -> Diagnosis: ...


def analyst_model(provider: ChatModelProvider, max_tokens: int | None) -> BaseChatModel:
    """The critic role at the analyst's temperature."""
    return provider.chat(
        "critic", sampling=SamplingSettings(temperature=ANALYST_TEMPERATURE), max_tokens=max_tokens
    )


@dataclass(frozen=True)
class AnalystEvidence:
    """What every analyst reads of a round: its rollouts by id, the gold answers by question
    id, the libraries, and the provider it calls."""

    rollouts: Mapping[str, Rollout]
    gold: Mapping[str, str]
    libraries: Mapping[str, SkillLibrary]
    provider: ChatModelProvider


@dataclass(frozen=True)
class SingleCallAnalyst:
    """Row 14's default: one structured critic call with the whole evidence in the prompt."""

    evidence: AnalystEvidence
    max_tokens: int | None = None

    async def analyse(self, cluster: FailureCluster) -> Diagnosis:
        evidence = self.evidence
        prompt = analyst_prompt(cluster, evidence.rollouts, evidence.gold, evidence.libraries)
        messages = [SystemMessage(ANALYST_SYSTEM), HumanMessage(prompt)]
        model = analyst_model(evidence.provider, self.max_tokens)
        try:
            return checked(cluster, await astructured_call(model, ClusterAnalysis, messages))
        except (StructuredOutputError, ModelRequestRefused) as failure:
            return unanalysed(cluster, f"{type(failure).__name__}: {failure}")


async def diagnose(clusters: Sequence[FailureCluster], analyst: ClusterAnalyst) -> list[Diagnosis]:
    """Diagnose each of the top `MAX_CLUSTERS` non-P2 clusters with `analyst`; a cluster without
    a valid analysis gets tag none."""
    return [
        await analyst.analyse(cluster)
        for cluster in [c for c in clusters if c.tier != "P2"][:MAX_CLUSTERS]
    ]
