"""Single-model baselines: voting, Self-Refine stopping, full-context protocol, harness files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grse_graph.baselines import (
    feedback_says_correct,
    majority_vote,
    make_baseline,
    normalize_vote,
    run_baseline,
)
from grse_graph.llm.provider import SamplingSettings
from grse_graph.tasks.locomo import load_locomo
from grse_graph.team.rollout import Rollout
from tests.fakes import FakeProvider, ScriptedChatModel
from tests.unit.team.team_fakes import FakeTask, question

LOCOMO_MINI = Path(__file__).parents[2] / "fixtures" / "tasks" / "locomo_mini.json"


def answer(method: str, replies: list[str], provider: FakeProvider | None = None) -> Rollout:
    task = FakeTask([question("q1", answer="Osterlin")])
    provider = provider or FakeProvider(models={"actor": ScriptedChatModel(replies)})
    baseline = make_baseline(method, task, provider)  # type: ignore[arg-type]
    return asyncio.run(baseline.answer(task.split("test")[0], rollout_id="b-1"))


def test_normalize_vote() -> None:
    assert normalize_vote("The  Osterlin!") == "osterlin"


def test_majority_vote_over_normalised_answers() -> None:
    assert majority_vote(["Paris", "the Osterlin", "osterlin.", "Paris ", "Osterlin"]) == (
        "the Osterlin",
        3,
    )


def test_majority_vote_tie_goes_to_first_seen_and_empty_answers_do_not_vote() -> None:
    assert majority_vote(["", "b", "a", "", "a", "b"]) == ("b", 2)
    assert majority_vote(["", ""]) == ("", 2)


@pytest.mark.parametrize(
    ("feedback", "correct"),
    [
        ("CORRECT", True),
        ("The answer is CORRECT.", True),
        ("correct", False),
        ("INCORRECT: the founder was born in Osterlin.", False),
        ("NOT CORRECT", False),
        ("The answer is wrong; the CORRECT answer is Osterlin. It is INCORRECT.", False),
    ],
)
def test_feedback_says_correct(feedback: str, correct: bool) -> None:
    assert feedback_says_correct(feedback) is correct


def test_io_answers_in_one_call() -> None:
    rollout = answer("io", ["Answer: Osterlin"])
    assert (rollout.answer, rollout.reward, len(rollout.steps)) == ("Osterlin", 1.0, 1)
    assert rollout.steps[0].input_ref == "question:q1:input"


def test_cot_extracts_the_answer_line() -> None:
    rollout = answer("cot", ["Aster Vey founded it; he was born in Osterlin.\nAnswer: Osterlin"])
    assert rollout.answer == "Osterlin"
    assert rollout.steps[0].agent == "cot"


def test_cot_sc_samples_five_times_at_temperature_0_7_and_votes() -> None:
    provider = FakeProvider(
        models={
            "actor": ScriptedChatModel(
                [
                    "Answer: Paris",
                    "Answer: Osterlin",
                    "Answer: paris",
                    "Answer: Osterlin.",
                    "Answer: osterlin",
                ]
            )
        }
    )
    rollout = answer("cot-sc", [], provider)
    assert rollout.answer == "Osterlin"
    assert len(rollout.steps) == 5
    samplings = [s for _, s, _ in provider.requests]
    assert [s.temperature for s in samplings if s is not None] == [0.7] * 5
    assert [s.seed for s in samplings if s is not None] == [0, 1, 2, 3, 4]


def test_self_refine_stops_when_feedback_says_correct() -> None:
    rollout = answer(
        "self-refine",
        ["Answer: Paris", "Wrong city.", "Answer: Osterlin", "CORRECT", "never used"],
    )
    assert [s.agent for s in rollout.steps] == ["initial", "feedback", "revise", "feedback"]
    assert rollout.answer == "Osterlin"


def test_self_refine_makes_at_most_three_rounds() -> None:
    replies = ["Answer: a", "wrong", "Answer: b", "wrong", "Answer: c", "wrong", "Answer: d"]
    rollout = answer("self-refine", [*replies, "never used"])
    assert len(rollout.steps) == 7
    assert [s.agent for s in rollout.steps].count("feedback") == 3
    assert rollout.answer == "d"


def test_full_context_renders_everything_and_caps_at_32_tokens() -> None:
    provider = FakeProvider(models={"actor": ScriptedChatModel(["Osterlin"])})
    rollout = answer("full-context", [], provider)
    assert provider.requests[0][2] == 32
    assert "FULL CONTEXT of q1" in rollout.steps[0].input
    assert "short phrase" in rollout.steps[0].input
    assert rollout.answer == "Osterlin"


def test_unknown_baseline_is_named() -> None:
    with pytest.raises(ValueError, match="unknown baseline 'tot'"):
        make_baseline("tot", FakeTask([]), FakeProvider())  # type: ignore[arg-type]


def test_run_baseline_writes_the_evaluation_files(tmp_path: Path) -> None:
    task = FakeTask([question("q1"), question("q2", answer="Tamsford")])
    provider = FakeProvider(models={"actor": ScriptedChatModel(["Answer: Osterlin", "Answer: x"])})
    summary = asyncio.run(
        run_baseline(
            "io",
            task,
            "test",
            provider,
            tmp_path,
            progress=False,
            sampling=SamplingSettings.greedy(),
        )
    )
    assert summary.method == "io"
    assert summary.overall.metrics["f1"] == 0.5
    assert {p.name for p in tmp_path.iterdir()} == {"run.json", "predictions.jsonl", "summary.json"}


@pytest.mark.parametrize(
    ("method", "replies"),
    [
        ("io", ["Answer: Osterlin"]),
        ("cot", ["Answer: Osterlin"]),
        ("cot-sc", ["Answer: Osterlin"] * 5),
        ("self-refine", ["Answer: a", "wrong", "Answer: Osterlin", "CORRECT"]),
        ("full-context", ["Osterlin"]),
    ],
)
def test_every_call_is_one_user_message_without_system_prompt(
    method: str, replies: list[str]
) -> None:
    model = ScriptedChatModel(replies)
    rollout = answer(method, [], FakeProvider(models={"actor": model}))
    assert model.calls
    for messages in model.calls:
        assert [m.type for m in messages] == ["human"]
    assert all(step.system_prompt == "" for step in rollout.steps)


def test_locomo_full_context_carries_the_temporal_instruction() -> None:
    task = load_locomo(LOCOMO_MINI, train_conversations=1, validation_conversations=1)
    by_id = {q.id: q for q in task.split("test")}
    model = ScriptedChatModel(["2023", "Noodle"])
    baseline = make_baseline("full-context", task, FakeProvider(models={"actor": model}))
    asyncio.run(baseline.answer(by_id["conv-a-q1"], rollout_id="t"))
    asyncio.run(baseline.answer(by_id["conv-a-q0"], rollout_id="s"))
    temporal, single = (str(messages[0].content) for messages in model.calls)
    assert temporal.startswith(task.render_full_context(by_id["conv-a-q1"]) + "\n\nBased on")
    assert temporal.endswith(
        "Question: When did Milo start learning the cello? Use DATE of CONVERSATION to answer "
        "with an approximate date. Short answer:"
    )
    assert "Use DATE of CONVERSATION" not in single
