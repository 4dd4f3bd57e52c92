"""`grse demo`'s pieces: its configuration, the printout of what was learned and of the test
transitions (on constructed results), and `run_demo` end to end on fakes."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from rich.console import Console

from grse_graph.evaluation.records import PredictionRecord
from grse_graph.evaluation.transitions import compare_predictions
from grse_graph.methods.operators.schema import OperatorEvidence
from grse_graph.methods.plan import FailureDiagnosis
from grse_graph.tasks.base import TaskQuestion
from grse_graph.training.demo import (
    DEMO_SETTINGS,
    learning_config,
    print_comparison,
    print_learned,
    run_demo,
)
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.provenance import (
    CitedDiagnosis,
    GateEvidence,
    LearnedSkill,
    SkillChange,
    SourceQuestion,
)
from grse_graph.training.run_folder import RunFolder
from tests.unit.training.fakes import CallLog, CountingProvider, TinyTask
from tests.unit.training.test_report_provenance import decision


def printed(draw: object, *args: object) -> str:
    out = io.StringIO()
    draw(Console(file=out, width=220, color_system=None), *args)  # type: ignore[operator]
    return out.getvalue()


def test_learning_config_is_the_demo_configuration_for_every_method() -> None:
    grse = learning_config()
    assert grse.task == "demo" and grse.iterations == DEMO_SETTINGS["iterations"]
    assert (grse.batch_size, grse.validation_size) == (2, 4)
    assert grse.method.model_dump()["group_size"] == DEMO_SETTINGS["group_size"]
    assert grse.method.model_dump()["critic_max_tokens"] == DEMO_SETTINGS["critic_max_tokens"]
    maskills = learning_config("maskills", task="hotpotqa", data="x.json", iterations=None)
    assert (maskills.method.name, maskills.task) == ("maskills", "hotpotqa")
    assert maskills.data == "x.json"
    assert maskills.iterations == DEMO_SETTINGS["iterations"]  # None keeps the demo's value
    assert "group_size" not in maskills.method.model_dump()  # MASkills has no group
    assert maskills.method.model_dump()["critic_max_tokens"] == DEMO_SETTINGS["critic_max_tokens"]
    assert learning_config(batch_size=5).batch_size == 5


def learned_skill() -> LearnedSkill:
    d = FailureDiagnosis.model_validate(
        {
            "agent": "reasoner",
            "skill_id": None,
            "failure_type": "answer_format",
            "failed_refs": ["r1.s2"],
            "successful_refs": [],
            "explanation": "Wrote a sentence.",
            "correction": "Write the entity only.",
            "action": "induce",
        }
    )
    return LearnedSkill(
        agent="reasoner",
        name="short-answers",
        description="Answer with the entity only.",
        body="1. Find the entity.\n2. Write only it.",
        utility=0.5,
        changes=[
            SkillChange(
                iteration=1,
                operator="induce",
                skill="short-answers",
                reason="induce for 'answer format': support 2 question(s)",
                evidence=OperatorEvidence(support=2, question_ids=["q7"]),
                feedback=["Answers are too long."],
                questions=[
                    SourceQuestion(
                        question_id="q7",
                        question="Which city hosts the museum?",
                        gold_answer="Osterlin",
                        rewards=[0.0, 0.4],
                        diagnoses=[CitedDiagnosis(diagnosis=d, is_hypothesis=True)],
                    )
                ],
                gate=GateEvidence(
                    decision=decision("reasoner", 0.3, 0.4, True),
                    validation_questions=8,
                    validation_repeats=1,
                ),
            )
        ],
    )


def test_print_learned_shows_the_skill_its_provenance_gate_numbers_and_body() -> None:
    text = printed(print_learned, [learned_skill()])
    assert "what was learned: 1 skill(s) in the final libraries" in text
    assert "reasoner / short-answers (utility 0.50): Answer with the entity only." in text
    assert "iteration 1, induce: induce for 'answer format': support 2 question(s)" in text
    assert (
        "gate: validation 0.300 -> 0.400, difference +0.100 (s.e. 0.144), tolerance 0.020 "
        "(|V| = 8 x H = 1): accepted"
    ) in text
    assert "feedback: Answers are too long." in text
    source = (
        "from q7: 'Which city hosts the museum?' (gold 'Osterlin'); training rewards 0.00, 0.40"
    )
    assert source in text
    assert "vs no successful rollout. Wrote a sentence. Correction (hypothesis): Write the" in text
    assert "2. Write only it." in text


def test_print_learned_says_when_nothing_was_accepted() -> None:
    text = printed(print_learned, [])
    assert "0 skill(s)" in text and "no skill was accepted" in text


def test_print_comparison_shows_questions_the_3x3_table_and_the_interval() -> None:
    def rec(qid: str, prediction: str, reward: float) -> PredictionRecord:
        return PredictionRecord(
            id=qid,
            question=qid,
            answer="Osterlin",
            category="multi-hop:bridge",
            prediction=prediction,
            reward=reward,
            metrics={"f1": reward},
            state="declined" if not prediction else ("correct" if reward >= 0.5 else "wrong"),
        )

    comparison = compare_predictions(
        [rec("q1", "", 0.0), rec("q2", "Paris", 0.0), rec("q3", "Osterlin", 1.0)],
        [rec("q1", "Osterlin", 1.0), rec("q2", "Paris", 0.0), rec("q3", "Osterlin", 1.0)],
        resamples=500,
    )
    text = printed(print_comparison, comparison)
    assert "declined 0.00:" in text and "correct 1.00: Osterlin" in text and "+1.00" in text
    # The 3x3 table: rows before (empty), columns after (trained), with totals.
    table_rows = [" ".join(line.replace("│", " ").split()) for line in text.splitlines()]
    assert "declined 0 0 1 1" in table_rows
    assert "wrong 0 1 0 1" in table_rows
    assert "correct 0 0 1 1" in table_rows
    assert "total 0 1 2 3" in table_rows
    assert "correct = token F1 >= 0.5" in text
    assert "paired difference +0.333, 95% bootstrap interval [" in text
    assert "(3 questions, 500 resamples, seed 0)" in text


class TinyTaskWithContext(TinyTask):
    """TinyTask with the full-context rendering the memorisation check reads."""

    def render_full_context(self, question: TaskQuestion) -> str:
        return self.render_input(question)


def test_run_demo_compares_question_by_question_and_writes_it_into_report_md(
    tmp_path: Path,
) -> None:
    config = learning_config(
        task="tiny", group_size=2, batch_size=2, validation_size=2, concurrency=1
    )
    log = CallLog()
    deps = TrainingDeps(
        task=TinyTaskWithContext(),
        provider=CountingProvider(log),
        config=config,
        run=RunFolder(tmp_path),
        usage=lambda: {"roles": {"actor": {"calls": len(log.calls)}}, "total": {}},
    )
    result = asyncio.run(
        run_demo(config, deps, test_limit=None, console=Console(file=io.StringIO()))
    )
    # The fake answers greedily right only with a skill in its prompt: every test question
    # goes from wrong to correct (TinyTask has no F1: correct = reward >= 1).
    assert [(t.question_id, t.before, t.after) for t in result.comparison.transitions] == [
        ("x0", "wrong", "correct"),
        ("x1", "wrong", "correct"),
    ]
    assert result.comparison.paired.difference == 1.0
    assert "reward >= 1.0" in result.comparison.correct_rule
    assert [(s.agent, s.name) for s in result.learned] == [("reasoner", "colour-answers")]
    (change,) = result.learned[0].changes
    assert change.operator == "induce" and change.gate is not None
    assert change.gate.decision.accepted
    # The training questions behind the skill, with their text (kept in the credit records).
    assert change.questions and all(q.question for q in change.questions)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "### reasoner / colour-answers" in report
    assert "## Test: empty vs trained libraries" in report
    assert "| x0 | - | blue | wrong 0.00: red | correct 1.00: blue | +1.00 |" in report


def test_run_demo_resumes_a_finished_run_without_a_model_call(tmp_path: Path) -> None:
    config = learning_config(
        task="tiny", group_size=2, batch_size=2, validation_size=2, concurrency=1
    )
    log = CallLog()

    def deps() -> TrainingDeps:
        return TrainingDeps(
            task=TinyTaskWithContext(),
            provider=CountingProvider(log),
            config=config,
            run=RunFolder(tmp_path),
            usage=lambda: {"roles": {}, "total": {}},
        )

    console = Console(file=io.StringIO())
    first = asyncio.run(run_demo(config, deps(), test_limit=1, console=console))
    calls = len(log.calls)
    again = asyncio.run(run_demo(config, deps(), test_limit=1, console=console, resume=True))
    assert len(log.calls) == calls
    assert again.comparison == first.comparison and again.learned == first.learned
    assert [t.question_id for t in again.comparison.transitions] == ["x0"]


def test_run_demo_reuses_a_shared_empty_library_test(tmp_path: Path) -> None:
    config = learning_config(
        task="tiny", group_size=2, batch_size=2, validation_size=2, concurrency=1
    )
    shared = tmp_path / "test_start"
    logs = {"first": CallLog(), "second": CallLog()}
    results = {}
    for name, log in logs.items():
        deps = TrainingDeps(
            task=TinyTaskWithContext(),
            provider=CountingProvider(log),
            config=config,
            run=RunFolder(tmp_path / name),
            usage=lambda: {"roles": {}, "total": {}},
        )
        results[name] = asyncio.run(
            run_demo(
                config,
                deps,
                test_limit=None,
                console=Console(file=io.StringIO()),
                start_test=shared,
            )
        )
    # The second run trains and tests its own library but answers no empty-library question
    # (each answer is one call per agent of the two-agent team).
    test_questions = len(results["first"].comparison.transitions)
    assert test_questions == 2
    assert logs["second"].count("actor") == logs["first"].count("actor") - 2 * test_questions
    assert results["second"].comparison == results["first"].comparison
    assert not (tmp_path / "second" / "test_start").exists()
    assert (tmp_path / "second" / "test_final" / "predictions.jsonl").exists()


def test_run_demo_with_maskills_shows_its_skills_provenance_from_its_own_records(
    tmp_path: Path,
) -> None:
    from tests.unit.methods.maskills.test_maskills_training import FakeProvider

    config = learning_config(
        "maskills", task="tiny", batch_size=2, validation_size=2, concurrency=1
    )
    deps = TrainingDeps(
        task=TinyTaskWithContext(), provider=FakeProvider(), config=config, run=RunFolder(tmp_path)
    )
    result = asyncio.run(
        run_demo(config, deps, test_limit=None, console=Console(file=io.StringIO()))
    )
    assert sorted((s.agent, s.name) for s in result.learned) == [
        ("reasoner", "colour-answers"),
        ("retriever", "colour-answers"),
    ]
    for skill in result.learned:
        (change,) = skill.changes
        assert change.operator == "induce" and change.gate is not None
        # MASkills induces from agent-level evidence: its hard cases and their questions.
        assert change.questions and all(q.question and q.rewards == [0.0] for q in change.questions)
    assert result.comparison.table.fixed == 2
