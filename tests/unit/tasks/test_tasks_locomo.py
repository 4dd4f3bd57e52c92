"""LoCoMo task: conversation split, categories, question rendering, grep wiring, scoring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grse_graph.errors import TaskError
from grse_graph.tasks import load_task
from grse_graph.tasks.locomo import (
    LocomoTask,
    category_prompt,
    conversation_split,
    full_context_question,
    load_locomo,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tasks"
MINI = FIXTURES / "locomo_mini.json"


def mini(**options: Any) -> LocomoTask:
    return load_locomo(MINI, train_conversations=1, validation_conversations=1, **options)


def test_conversation_split_uses_seeded_shuffle() -> None:
    # random.Random(42).shuffle(["conv-a", "conv-b", "conv-c", "conv-d"]) gives c, b, d, a.
    ids = ["conv-a", "conv-b", "conv-c", "conv-d"]
    assert conversation_split(ids, 42, 1, 1) == {
        "train": ["conv-c"],
        "validation": ["conv-b"],
        "test": ["conv-a", "conv-d"],
    }


def test_splits_hold_questions_of_their_conversations() -> None:
    task = mini()
    ids = {name: [q.id for q in qs] for name, qs in task.splits().items()}
    assert ids == {
        "train": ["conv-c-q0"],
        "validation": ["conv-b-q0", "conv-b-q1"],
        # conv-a-q3 is category 5 (adversarial) and is excluded.
        "test": [
            "conv-a-q0",
            "conv-a-q1",
            "conv-a-q2",
            "conv-a-q4",
            "conv-a-q5",
            "conv-d-q0",
            "conv-d-q1",
        ],
    }
    assert task.kind == "conversation"
    assert task.categories == ["multi-hop", "temporal", "open-domain", "single-hop"]


def test_default_split_sizes_two_two_rest() -> None:
    task = load_task("locomo", MINI)
    assert [len(task.splits()[s]) for s in ("train", "validation", "test")] == [3, 7, 0]
    with pytest.raises(TaskError, match="split 'test' of task 'locomo' is empty"):
        task.split("test")


def test_data_folder_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "locomo10.json").write_text(MINI.read_text())
    assert load_task("locomo", tmp_path).splits()["train"]


@pytest.mark.parametrize(("option", "expected"), [(2, ["temporal"]), ("temporal", ["temporal"])])
def test_single_category(option: object, expected: list[str]) -> None:
    task = mini(category=option)
    assert task.categories == expected
    assert {q.category for q in task.splits()["test"]} == {"temporal"}
    assert [q.id for q in task.split("test")] == ["conv-a-q1", "conv-a-q2"]


def test_category_list_and_mixed() -> None:
    assert mini(category=[4, "multi-hop"]).categories == ["multi-hop", "single-hop"]
    assert mini(category="mixed").categories == mini().categories


@pytest.mark.parametrize("bad", [5, "adversarial", 0, "7"])
def test_bad_category_option(bad: object) -> None:
    with pytest.raises(TaskError, match="unknown category"):
        mini(category=bad)


def test_question_fields_int_answer_becomes_string() -> None:
    q = {q.id: q for q in mini().split("test")}["conv-a-q2"]
    assert q.answer == "2023"
    assert q.category == "temporal"
    assert q.context["conversation_id"] == "conv-a"
    assert q.context["speakers"] == ["Rosa", "Milo"]
    assert q.context["locomo_category"] == 2
    assert q.context["evidence"] == ["D1:1"]
    assert q.passages == []


def test_render_input_has_category_and_no_conversation_text() -> None:
    task = mini()
    q = task.split("test")[0]
    text = task.render_input(q)
    assert text == (
        "Question: What is the name of Rosa's cat?\n\n"
        f"Category: single-hop\n{category_prompt(4)}\n\n"
        "The answer is in a long multi-session conversation between Rosa and Milo. The "
        "conversation is not shown here: search it with the grep tool."
    )
    assert "Noodle" not in text


@pytest.mark.parametrize(
    ("category", "phrase"),
    [(1, "multi-hop question"), (2, "session date"), (3, "inferred"), (4, "stated in one turn")],
)
def test_each_category_has_its_own_task_prompt(category: int, phrase: str) -> None:
    prompts = {c: category_prompt(c) for c in (1, 2, 3, 4)}
    assert phrase in prompts[category]
    assert len(set(prompts.values())) == 4


def test_show_category_off_hides_category_and_prompt() -> None:
    task = mini(show_category=False)
    text = task.render_input(task.split("test")[1])
    assert "Category" not in text
    assert category_prompt(2) not in text


def test_full_context_follows_the_benchmark_layout() -> None:
    task = mini()
    q = task.split("test")[0]
    assert task.render_full_context(q) == (
        "Below is a conversation between two people: Rosa and Milo. The conversation takes "
        "place over multiple days and the date of each conversation is written at the "
        "beginning of the conversation.\n\n"
        "DATE: 1:00 pm on 2 May, 2023\nCONVERSATION:\n"
        'Rosa said, "I adopted a cat called Noodle."\n'
        'Milo said, "Lovely! Look at my garden." and shared a photo of tomato plants in a '
        "garden\n\n"
        "DATE: 9:30 am on 20 June, 2023\nCONVERSATION:\n"
        'Milo said, "I started learning the CELLO last week."\n'
        'Rosa said, "Noodle broke a vase again." and shared a photo of a broken blue vase'
    )
    temporal = task.split("test")[1]
    assert full_context_question(temporal).endswith(
        "cello? Use DATE of CONVERSATION to answer with an approximate date."
    )
    assert full_context_question(q) == q.question


def test_grep_only_for_the_first_agent_and_fresh_per_call() -> None:
    task = mini()
    q = task.split("test")[0]
    assert task.agent_tools(q, "reasoner", position=1) == []
    assert task.agent_tools(q, "retriever", position=1) == []
    (first,) = task.agent_tools(q, "anything", position=0)
    (by_name,) = task.agent_tools(q, "retriever")
    assert task.agent_tools(q, "reasoner") == []
    assert first.name == "grep"
    for _ in range(3):
        first.invoke({"query": "noodle"})
    assert "limit reached" in first.invoke({"query": "noodle"})
    # A new rollout gets a new budget.
    assert "[D1:1]" in by_name.invoke({"query": "noodle"})


def test_grep_searches_only_the_question_conversation() -> None:
    task = mini()
    q = {q.id: q for q in task.split("test")}["conv-d-q0"]
    (tool,) = task.agent_tools(q, "retriever", position=0)
    out = tool.invoke({"query": "Eve|Noodle"})
    assert "[D1:1] (6:00 pm on 9 September, 2020) Di said" in out
    assert "adopted a cat" not in out


def test_score_routes_to_locomo_metrics() -> None:
    task = mini()
    by_id = {q.id: q for q in task.split("test")}
    single = task.score(by_id["conv-a-q0"], "Noodle")
    assert single.reward == 1.0
    assert single.metrics == {"f1": 1.0, "bleu": 1.0}
    # Category 3: the gold is cut at ";" before scoring.
    open_domain = task.score(by_id["conv-a-q5"], "yes")
    assert open_domain.metrics["f1"] == 1.0
    # Category 1: gold parts are matched against prediction parts.
    multi = task.score(by_id["conv-a-q4"], "garden, cat")
    assert multi.metrics["f1"] == 1.0
    wrong = task.score(by_id["conv-a-q0"], "a dog")
    assert wrong.reward == 0.0


def test_missing_answer_names_sample_and_question(tmp_path: Path) -> None:
    data = json.loads(MINI.read_text())
    del data[1]["qa"][1]["answer"]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TaskError, match=r"sample conv-b qa\[1\]: field 'answer'"):
        load_task("locomo", path)


def test_missing_turn_field_names_session_and_turn(tmp_path: Path) -> None:
    data = json.loads(MINI.read_text())
    del data[0]["conversation"]["session_2"][1]["speaker"]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TaskError, match=r"conv-a session_2\[1\]: field 'speaker'"):
        load_task("locomo", path)


def test_needs_a_path_and_a_list(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="needs a data path"):
        load_task("locomo")
    with pytest.raises(TaskError, match="data file not found"):
        load_task("locomo", tmp_path)  # folder without locomo10.json
    path = tmp_path / "x.json"
    path.write_text("{}")
    with pytest.raises(TaskError, match="non-empty JSON list"):
        load_task("locomo", path)
