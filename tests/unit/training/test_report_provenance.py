"""A learned skill followed back through a small hand-written run folder: operator records, the
plan, the credit records and the gate; and the report's sections built from it."""

from __future__ import annotations

from pathlib import Path

from grse_graph.evaluation.records import PredictionRecord
from grse_graph.evaluation.transitions import compare_predictions
from grse_graph.methods.gate import GateDecision
from grse_graph.methods.grse.critic_schema import CheckedDiagnosis, CritiqueResult
from grse_graph.methods.grse.method import CritiqueRecord, GrseMethod, GrseSettings
from grse_graph.methods.operators.schema import OperatorEvidence, OperatorRecord
from grse_graph.methods.plan import (
    AgentEvidence,
    AggregationResult,
    EditDirection,
    FailureDiagnosis,
    InductionPattern,
    PatternExample,
)
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.training.config import TrainConfig
from grse_graph.training.provenance import learned_skills
from grse_graph.training.records import AggregateRecord, GateRecord, OperatorLine
from grse_graph.training.report import comparison_lines, gate_text, learned_lines, write_report
from grse_graph.training.run_folder import RunFolder

AGENTS = ("retriever", "reasoner")
BODY_1 = "When the question asks for a colour, reply with the colour word only."
BODY_2 = BODY_1 + "\nCheck the passage names that colour before answering."


def skill(name: str, body: str) -> Skill:
    return Skill.build(name=name, description=f"Use for {name}.", body=body)


def diagnosis(agent: str, explanation: str, action: str = "induce") -> FailureDiagnosis:
    return FailureDiagnosis.model_validate(
        {
            "agent": agent,
            "skill_id": None,
            "failure_type": "answer_format",
            "failed_refs": ["r1.s2"],
            "successful_refs": ["r2.s2"],
            "explanation": explanation,
            "correction": "Answer with the colour word.",
            "action": action,
        }
    )


def op(iteration: int, agent: str, operator: str, **kw: object) -> OperatorLine:
    fields = {"before_hash": "b", "after_hash": "a", "changed": True, "reason": "why"} | kw
    record = OperatorRecord.model_validate(
        {"operator": operator, "agent": agent, "iteration": iteration, **fields}
    )
    return OperatorLine(iteration=iteration, record=record)


def decision(agent: str, base: float, candidate: float, accepted: bool) -> GateDecision:
    return GateDecision(
        agent=agent,
        base_score=base,
        candidate_score=candidate,
        delta=0.02,
        accepted=accepted,
        difference=candidate - base,
        standard_error=0.144,
    )


def gate(iteration: int, base: float, decisions: list[GateDecision]) -> GateRecord:
    return GateRecord(
        iteration=iteration,
        base_score=base,
        validation_questions=4,
        validation_repeats=2,
        decisions=decisions,
        libraries_before={},
        libraries_after={},
        skills_after={},
        library_paths={},
    )


def save(run: RunFolder, iteration: int, libraries: dict[str, list[Skill]]) -> None:
    for agent in AGENTS:
        library = SkillLibrary.build(agent, libraries.get(agent, []))
        run.save_library(run.library_dir(iteration, agent), library)


def critique(question_id: str, **kw: object) -> CritiqueRecord:
    return CritiqueRecord.model_validate(
        {
            "iteration": 1,
            "unit_id": f"it1-{question_id}-critic",
            "question_id": question_id,
            "rollout_ids": ["r1", "r2"],
            "rewards": [0.0, 1.0],
            "advantages": [-1.0, 1.0],
            **kw,
        }
    )


def induce_then_refine_run(path: Path) -> RunFolder:
    """Iteration 1 induces colour-answers for the reasoner (accepted) and search-more for the
    retriever (rejected); iteration 2 refines colour-answers (accepted)."""
    run = RunFolder(path)
    run.write_config(TrainConfig(task="tiny", iterations=2))
    save(run, 0, {})
    save(run, 1, {"reasoner": [skill("colour-answers", BODY_1)]})
    save(run, 2, {"reasoner": [skill("colour-answers", BODY_2)]})
    kept = diagnosis("reasoner", "Answered red although the passage says blue.")
    run.credits(CritiqueRecord).append(
        critique(
            "t0",
            question="What colour is item t0?",
            gold_answer="blue",
            result=CritiqueResult(
                question_id="t0",
                diagnoses=[
                    CheckedDiagnosis(diagnosis=kept, status="accepted", is_hypothesis=False),
                    CheckedDiagnosis(
                        diagnosis=diagnosis("reasoner", "A dropped diagnosis."), status="dropped"
                    ),
                    CheckedDiagnosis(
                        diagnosis=diagnosis("retriever", "Another agent's failure."),
                        status="accepted",
                    ),
                ],
            ),
        )
    )
    # A record written before credit records kept the question, and whose critic failed.
    run.credits(CritiqueRecord).append(critique("t1", error="critic failed"))
    example = diagnosis("reasoner", "Wrote a sentence instead of the colour.")
    run.aggregates.append(
        AggregateRecord(
            iteration=1,
            result=AggregationResult(
                patterns=[
                    InductionPattern(
                        agent="reasoner",
                        failure_type="answer_format",
                        action="induce",
                        support=2,
                        question_ids=["t0", "t1"],
                        examples=[PatternExample(question_id="t1", diagnosis=example)],
                    )
                ],
                agent_evidence=[AgentEvidence(agent="retriever", items=["Search wider."])],
            ),
        )
    )
    run.aggregates.append(
        AggregateRecord(
            iteration=2,
            result=AggregationResult(
                directions=[
                    EditDirection(
                        agent="reasoner",
                        skill_id="colour-answers",
                        summary="Helped, but trusted a wrong passage once.",
                        suggested_edit="Add a check against the passage.",
                        utility=0.4,
                        verdict="refine",
                        question_ids=["t2"],
                    )
                ]
            ),
        )
    )
    induce_evidence = OperatorEvidence(
        support=2, failure_type="answer_format", question_ids=["t0", "t1"]
    )
    for line in (
        op(1, "reasoner", "induce", created=["colour-answers"], evidence=induce_evidence),
        op(1, "retriever", "induce", created=["search-more"], evidence=OperatorEvidence()),
        op(1, "reasoner", "induce", changed=False, skipped_reason="copies a passage"),
        op(
            2,
            "reasoner",
            "refine",
            skills=["colour-answers"],
            evidence=OperatorEvidence(verdict="refine", question_ids=["t2"]),
        ),
    ):
        run.operators.append(line)
    run.gate.append(
        gate(
            1,
            0.25,
            [decision("reasoner", 0.25, 0.5, True), decision("retriever", 0.25, 0.1, False)],
        )
    )
    run.gate.append(gate(2, 0.5, [decision("reasoner", 0.5, 0.625, True)]))
    return run


def method() -> GrseMethod:
    return GrseMethod(GrseSettings())


def test_a_learned_skill_is_followed_back_to_its_questions_diagnoses_and_gates(
    tmp_path: Path,
) -> None:
    run = induce_then_refine_run(tmp_path)
    (learned,) = learned_skills(run, method())
    assert (learned.agent, learned.name, learned.body) == ("reasoner", "colour-answers", BODY_2)
    assert [(c.iteration, c.operator) for c in learned.changes] == [(1, "induce"), (2, "refine")]
    induce, refine = learned.changes
    assert induce.gate is not None and induce.gate.decision.candidate_score == 0.5
    assert (induce.gate.validation_questions, induce.gate.validation_repeats) == (4, 2)
    t0, t1 = induce.questions
    assert (t0.question, t0.gold_answer, t0.rewards) == ("What colour is item t0?", "blue", [0, 1])
    # Only the usable diagnosis of the pattern's agent and failure type.
    assert [d.diagnosis.explanation for d in t0.diagnoses] == [
        "Answered red although the passage says blue."
    ]
    # No critique result for t1: the plan's example of it stands in; no question recorded.
    assert t1.question is None
    assert [d.diagnosis.explanation for d in t1.diagnoses] == [
        "Wrote a sentence instead of the colour."
    ]
    assert refine.direction.startswith("Helped, but trusted a wrong passage once.")
    assert "Suggested edit: Add a check" in refine.direction
    assert refine.gate is not None and refine.gate.decision.base_score == 0.5


def test_a_consolidated_skill_keeps_the_trail_of_the_skills_it_merged(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    run.write_config(TrainConfig(task="tiny", iterations=2))
    save(run, 0, {})
    save(run, 1, {"reasoner": [skill("alpha", "Do alpha."), skill("beta", "Do beta.")]})
    save(run, 2, {"reasoner": [skill("alpha-beta", "Do alpha, then beta.")]})
    for line in (
        op(1, "reasoner", "induce", created=["alpha"]),
        op(1, "reasoner", "induce", created=["beta"]),
        op(
            2,
            "reasoner",
            "consolidate",
            skills=["alpha", "beta"],
            created=["alpha-beta"],
            removed=["alpha", "beta"],
        ),
    ):
        run.operators.append(line)
    run.gate.append(gate(1, 0.2, [decision("reasoner", 0.2, 0.3, True)]))
    run.gate.append(gate(2, 0.3, [decision("reasoner", 0.3, 0.3, True)]))
    (learned,) = learned_skills(run, method())
    assert [(c.iteration, c.operator, c.skill) for c in learned.changes] == [
        (1, "induce", "alpha"),
        (1, "induce", "beta"),
        (2, "consolidate", "alpha-beta"),
    ]
    assert learned.changes[-1].merged_from == ["alpha", "beta"]


def test_a_skill_of_the_starting_library_has_no_change_and_an_unnamed_change_is_kept(
    tmp_path: Path,
) -> None:
    run = RunFolder(tmp_path)
    run.write_config(TrainConfig(task="tiny", iterations=1))
    save(run, 0, {"reasoner": [skill("given", "Be brief.")], "retriever": [skill("x", "X.")]})
    save(run, 1, {"reasoner": [skill("given", "Be brief.")], "retriever": [skill("x", "Y.")]})
    given, edited = sorted(learned_skills(run, method()), key=lambda s: s.name)
    assert given.from_start and given.changes == []
    (change,) = edited.changes
    assert change.operator is None and "no operator record" in change.reason
    assert "From the starting library" in "\n".join(learned_lines([given]))


def test_gate_text_puts_the_standard_error_next_to_the_tolerance() -> None:
    from grse_graph.training.provenance import GateEvidence

    evidence = GateEvidence(
        decision=decision("reasoner", 0.25, 0.5, True), validation_questions=4, validation_repeats=2
    )
    assert gate_text(evidence) == (
        "gate: validation 0.250 -> 0.500, difference +0.250 (s.e. 0.144), tolerance 0.020 "
        "(|V| = 4 x H = 2): accepted"
    )
    old = evidence.model_copy(
        update={"decision": evidence.decision.model_copy(update={"standard_error": None})}
    )
    assert "difference +0.250 (s.e. not recorded)" in gate_text(old)
    assert gate_text(None) == "gate: no decision recorded for this agent"


def test_report_md_shows_the_learned_skill_its_provenance_and_the_test_transitions(
    tmp_path: Path,
) -> None:
    run = induce_then_refine_run(tmp_path)

    def prediction(qid: str, text: str, reward: float) -> PredictionRecord:
        state = "correct" if reward >= 0.5 else "wrong"
        return PredictionRecord(
            id=qid,
            question=qid,
            answer="blue",
            prediction=text,
            reward=reward,
            metrics={"f1": reward},
            state=state,
        )

    comparison = compare_predictions(
        [prediction("x0", "red", 0.0), prediction("x1", "blue", 1.0)],
        [prediction("x0", "blue", 1.0), prediction("x1", "blue", 1.0)],
        resamples=100,
    )
    text = write_report(run, comparison=comparison).read_text(encoding="utf-8")
    learned = text[text.index("## What was learned") : text.index("## Test:")]
    assert "### reasoner / colour-answers" in learned
    assert "search-more" not in learned  # the rejected candidate is not learned
    assert "iteration 1, induce: why" in learned
    assert "validation 0.250 -> 0.500, difference +0.250 (s.e. 0.144), tolerance 0.020" in learned
    assert "question t0: 'What colour is item t0?' (gold 'blue'); training rewards 0.00, 1.00" in (
        learned
    )
    assert "answer_format of reasoner, action induce: failed r1.s2 vs r2.s2." in learned
    assert BODY_2.splitlines()[1] in learned
    test = text[text.index("## Test:") :]
    assert "| wrong | 0 | 0 | 1 | 1 |" in test
    assert "| x0 | - | blue | wrong 0.00: red | correct 1.00: blue | +1.00 |" in test
    assert "paired difference +0.500" in test
    assert "Became correct: 1; stopped being correct: 0." in test
    assert comparison_lines(comparison)[0] == "## Test: empty vs trained libraries"


def test_report_without_a_learned_skill_says_so(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    run.write_config(TrainConfig(task="tiny", iterations=1))
    save(run, 0, {})
    save(run, 1, {})
    text = write_report(run).read_text(encoding="utf-8")
    assert "No skill in the final libraries: training accepted none." in text
    assert "## Test:" not in text


def test_learned_skills_of_a_folder_without_libraries_is_empty(tmp_path: Path) -> None:
    assert learned_skills(RunFolder(tmp_path), method()) == []


def test_a_skill_induced_from_agent_evidence_cites_its_feedback_and_low_reward_cases(
    tmp_path: Path,
) -> None:
    run = RunFolder(tmp_path)
    run.write_config(TrainConfig(task="tiny", iterations=1))
    save(run, 0, {})
    save(run, 1, {"retriever": [skill("search-wider", "Search with two queries.")]})
    no_edit = diagnosis("retriever", "Searched one name only.", action="no_edit")
    run.credits(CritiqueRecord).append(
        critique(
            "t3",
            question="Who met whom?",
            gold_answer="Ada",
            result=CritiqueResult(
                question_id="t3",
                diagnoses=[
                    CheckedDiagnosis(diagnosis=no_edit, status="accepted"),
                    CheckedDiagnosis(
                        diagnosis=diagnosis("reasoner", "Not mine."), status="accepted"
                    ),
                ],
            ),
        )
    )
    run.aggregates.append(
        AggregateRecord(
            iteration=1,
            result=AggregationResult(
                agent_evidence=[
                    AgentEvidence(
                        agent="retriever",
                        items=["Retrieved too little."],
                        question_ids=["t3"],
                        hard_cases=["[answer_format] Searched one name only."],
                    )
                ]
            ),
        )
    )
    evidence = OperatorEvidence(support=1, question_ids=["t3"])
    run.operators.append(op(1, "retriever", "induce", created=["search-wider"], evidence=evidence))
    run.gate.append(gate(1, 0.2, [decision("retriever", 0.2, 0.2, True)]))
    (learned,) = learned_skills(run, method())
    (change,) = learned.changes
    assert change.feedback == [
        "Retrieved too little.",
        "low-reward case: [answer_format] Searched one name only.",
    ]
    (question,) = change.questions
    assert [d.diagnosis.explanation for d in question.diagnoses] == ["Searched one name only."]
