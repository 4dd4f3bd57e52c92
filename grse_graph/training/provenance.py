"""Where each learned skill came from, read back from the run folder alone.

A skill of the final library is followed backwards through the saved libraries
(`libraries/iter_<t>`): every iteration that added it or changed what an agent sees of it
(`Skill.content_hash`: bookkeeping such as utility does not count) is one `SkillChange`. For each
change the run folder gives

- the operator records of that iteration and agent (`operators.jsonl`) that created or edited
  the skill, with their reason and evidence (support, failure type, question ids);
- the iteration's plan (`aggregates.jsonl`): the induction patterns and the agent-level feedback
  the operator drew on;
- the credit records of those questions (`critiques.jsonl`): the training question and gold
  answer, the group's rewards and every usable diagnosis of the matching pattern the method's
  record offers (`CreditRecord.cited_diagnoses`; GRSE's critiques carry them);
- the gate's decision for that agent (`gate.jsonl`): validation before and after, the paired
  difference with its standard error, the tolerance.

A consolidation continues the trail through the skills it merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from grse_graph.methods.base import CitedDiagnosis, CreditMethod, CreditRecord
from grse_graph.methods.gate import GateDecision
from grse_graph.methods.operators.schema import OperatorEvidence, OperatorName, OperatorRecord
from grse_graph.methods.plan import (
    Action,
    AggregationResult,
    FailureDiagnosis,
    FailureType,
    PatternExample,
)
from grse_graph.skills import Skill

from .records import GateRecord
from .run_folder import RunFolder

PatternKey = tuple[str, FailureType, str | None, Action]


class SourceQuestion(BaseModel):
    """A training question a skill change drew on: the question (None in run folders written
    before credit records kept it), the training rewards of its rollouts, and the diagnoses
    and agent feedback of it that the change used."""

    question_id: str
    question: str | None = None
    gold_answer: str | None = None
    rewards: list[float] = Field(default_factory=list)
    diagnoses: list[CitedDiagnosis] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)


class GateEvidence(BaseModel):
    """The gate's decision on the candidate library that carried the change."""

    decision: GateDecision
    validation_questions: int
    validation_repeats: int


class SkillChange(BaseModel):
    """One iteration's change to the skill (its creation, an edit, a merge), and why."""

    iteration: int
    operator: OperatorName | None = Field(
        description="None: the skill changed but no operator record of the iteration names it"
    )
    skill: str = Field(description="the skill's name in that iteration")
    reason: str
    evidence: OperatorEvidence
    merged_from: list[str] = Field(default_factory=list)
    direction: str = Field(default="", description="the aggregated edit direction, for refine")
    feedback: list[str] = Field(
        default_factory=list, description="agent-level feedback the change drew on"
    )
    questions: list[SourceQuestion] = Field(default_factory=list)
    gate: GateEvidence | None = None


class LearnedSkill(BaseModel):
    """A skill of the final library with the changes that made it, oldest first (none for a
    skill kept unchanged from the starting library)."""

    agent: str
    name: str
    description: str
    body: str
    utility: float | None = None
    changes: list[SkillChange] = Field(default_factory=list)

    @property
    def from_start(self) -> bool:
        """Whether the skill is the starting library's, unchanged by training."""
        return not self.changes


def library_skills(directory: Path) -> list[Skill]:
    """The skills saved in one library folder, in name order (empty if the folder is absent)."""
    if not directory.exists():
        return []
    return [Skill.load(p.parent) for p in sorted(directory.glob("*/SKILL.md"))]


def libraries_by_iteration(run: RunFolder) -> dict[int, dict[str, list[Skill]]]:
    """iteration -> agent -> skills, for every saved libraries/iter_<t>."""
    found: dict[int, dict[str, list[Skill]]] = {}
    for t in run.library_iterations():
        root = run.path / "libraries" / f"iter_{t}"
        found[t] = {p.name: library_skills(p) for p in sorted(root.iterdir()) if p.is_dir()}
    return found


def _pattern_key(d: FailureDiagnosis) -> PatternKey:
    return (d.agent, d.failure_type, d.skill_id, d.action)


class _RunEvidence:
    """The run folder's records, indexed for following skills back."""

    def __init__(self, run: RunFolder, record_type: type[CreditRecord]) -> None:
        self.libraries = libraries_by_iteration(run)
        self.operators: dict[tuple[int, str], list[OperatorRecord]] = {}
        for line in run.operators.read():
            self.operators.setdefault((line.iteration, line.record.agent), []).append(line.record)
        self.plans = {a.iteration: a.result for a in run.aggregates.read()}
        self.gates: dict[int, GateRecord] = {g.iteration: g for g in run.gate.read()}
        self.credits: dict[tuple[int, str], list[CreditRecord]] = {}
        for record in run.credits(record_type).read():
            self.credits.setdefault((record.iteration, record.question_id), []).append(record)

    def skill_at(self, iteration: int, agent: str, name: str) -> Skill | None:
        for skill in self.libraries.get(iteration, {}).get(agent, []):
            if skill.name == name:
                return skill
        return None

    def changed_at(self, iteration: int, agent: str, name: str) -> bool:
        """Whether iteration t added the skill or changed what the agent sees of it."""
        now = self.skill_at(iteration, agent, name)
        before = self.skill_at(iteration - 1, agent, name)
        if now is None:
            return False
        return before is None or before.content_hash() != now.content_hash()

    def gate_of(self, iteration: int, agent: str) -> GateEvidence | None:
        gate = self.gates.get(iteration)
        if gate is None:
            return None
        for decision in gate.decisions:
            if decision.agent == agent:
                return GateEvidence(
                    decision=decision,
                    validation_questions=gate.validation_questions,
                    validation_repeats=gate.validation_repeats,
                )
        return None

    def change(self, iteration: int, agent: str, name: str) -> list[SkillChange]:
        """The changes of iteration t that made `name` (several when, e.g., induce was followed
        by a refine of the same skill in one iteration)."""
        records = [
            r
            for r in self.operators.get((iteration, agent), [])
            if r.changed and (name in r.created or (r.operator == "refine" and name in r.skills))
        ]
        gate = self.gate_of(iteration, agent)
        if not records:
            return [
                SkillChange(
                    iteration=iteration,
                    operator=None,
                    skill=name,
                    reason="changed in this iteration; no operator record names the skill",
                    evidence=OperatorEvidence(),
                    gate=gate,
                )
            ]
        return [self._describe(iteration, agent, name, r, gate) for r in records]

    def _describe(
        self,
        iteration: int,
        agent: str,
        name: str,
        record: OperatorRecord,
        gate: GateEvidence | None,
    ) -> SkillChange:
        plan = self.plans.get(iteration, AggregationResult())
        ev = record.evidence
        feedback: list[str] = []
        direction = ""
        if record.operator == "induce":
            patterns = [
                p
                for p in plan.patterns
                if p.agent == agent
                and p.action == "induce"
                and ev.failure_type is not None
                and p.failure_type == ev.failure_type
            ]
            if ev.failure_type is None:  # induced from agent-level evidence
                for evidence in plan.agent_evidence:
                    if evidence.agent == agent:
                        feedback = [
                            *(f"missing: {m}" for m in evidence.missing_capabilities),
                            *evidence.items,
                            *(f"low-reward case: {c}" for c in evidence.hard_cases),
                        ]
        elif record.operator == "refine":
            patterns = [
                p
                for p in plan.patterns
                if p.agent == agent and p.skill_id == name and p.action == "refine"
            ]
            found = plan.direction(agent, name)
            if found is not None:
                direction = found.summary + (
                    f" Suggested edit: {found.suggested_edit}" if found.suggested_edit else ""
                )
        else:
            patterns = []
        keys = {(p.agent, p.failure_type, p.skill_id, p.action) for p in patterns}
        examples = [ex for p in patterns for ex in p.examples]
        questions = [
            self._question(iteration, agent, qid, keys, examples, feedback_based=bool(feedback))
            for qid in ev.question_ids
        ]
        # Feedback already shown under its question is not repeated for the whole change.
        shown = {note for q in questions for note in q.feedback}
        feedback = [item for item in feedback if item not in shown]
        return SkillChange(
            iteration=iteration,
            operator=record.operator,
            skill=name,
            reason=record.reason,
            evidence=ev,
            merged_from=list(record.skills) if record.operator == "consolidate" else [],
            direction=direction,
            feedback=feedback,
            questions=questions,
            gate=gate,
        )

    def _question(
        self,
        iteration: int,
        agent: str,
        question_id: str,
        keys: set[PatternKey],
        examples: Sequence[PatternExample],
        *,
        feedback_based: bool,
    ) -> SourceQuestion:
        records = self.credits.get((iteration, question_id), [])
        diagnoses: list[CitedDiagnosis] = []
        notes: list[str] = []
        for record in records:
            # Agent-level induction draws on every usable diagnosis of the agent in the
            # question (its low-reward cases); pattern-based changes on the pattern's own.
            diagnoses += [
                cited
                for cited in record.cited_diagnoses()
                if _pattern_key(cited.diagnosis) in keys
                or (feedback_based and cited.diagnosis.agent == agent)
            ]
            if feedback_based:
                notes += record.feedback_for(agent)
        if not diagnoses:
            # Records that offer no diagnoses: the plan's examples of this question.
            diagnoses = [
                CitedDiagnosis(diagnosis=ex.diagnosis, is_hypothesis=ex.is_hypothesis)
                for ex in examples
                if ex.question_id == question_id
            ]
        first = next((r for r in records if r.question is not None), None)
        return SourceQuestion(
            question_id=question_id,
            question=first.question if first is not None else None,
            gold_answer=first.gold_answer if first is not None else None,
            rewards=[reward for r in records for reward in r.rewards],
            diagnoses=diagnoses,
            feedback=notes,
        )


def learned_skills(run: RunFolder, method: CreditMethod) -> list[LearnedSkill]:
    """Every skill of the run's final library (agents and skills in name order), each with
    the changes that made it, oldest first."""
    evidence = _RunEvidence(run, method.record_type)
    if not evidence.libraries:
        return []
    final_t = max(evidence.libraries)
    out: list[LearnedSkill] = []
    for agent, skills in sorted(evidence.libraries[final_t].items()):
        for skill in skills:
            out.append(
                LearnedSkill(
                    agent=agent,
                    name=skill.name,
                    description=skill.description,
                    body=skill.body,
                    utility=skill.utility,
                    changes=_trail(evidence, agent, skill.name, final_t),
                )
            )
    return out


def _trail(evidence: _RunEvidence, agent: str, name: str, final_t: int) -> list[SkillChange]:
    """The changes behind `name` from iteration `final_t` back to the start, oldest first."""
    changes: list[SkillChange] = []
    names = {name}
    for t in range(final_t, 0, -1):
        block = [
            change
            for current in sorted(names)
            if evidence.changed_at(t, agent, current)
            for change in evidence.change(t, agent, current)
        ]
        changes = block + changes
        for change in block:
            names.update(change.merged_from)
    return changes
