"""The user's JSONL task: context variants, splits, metrics, line-numbered errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grse_graph.errors import TaskError
from grse_graph.tasks import load_task

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tasks"


def write_lines(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_split_field_and_context_variants() -> None:
    task = load_task("jsonl", FIXTURES / "jsonl_with_split.jsonl")
    assert {name: [q.id for q in qs] for name, qs in task.splits().items()} == {
        "train": ["a"],
        "test": ["b", "c"],
    }
    assert task.categories == ["lookup", "count"]
    a = task.split("train")[0]
    assert task.render_input(a) == (
        "[Passage 1] Tarn\nTarn is a moon. Its sky is green.\n\n"
        "Question: What colour is the sky on Tarn?"
    )
    b, c = task.split("test")
    assert task.render_input(b) == (
        "[Passage 1]\nTarn is ruled by Queen Ola.\n\nQuestion: Who rules Tarn?"
    )
    assert c.answer == "3"
    assert task.render_full_context(c) == (
        "[Passage 1]\nVell has 3 moons.\n\n[Passage 2]\nTarn is one of them."
    )
    with pytest.raises(TaskError, match="no split 'validation'"):
        task.split("validation")


def test_question_without_context_renders_the_question_only(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"question": "q?", "answer": "a", "split": "test"}')
    task = load_task("jsonl", path)
    q = task.split("test")[0]
    assert task.render_input(q) == "Question: q?"
    assert q.id == "line-1"
    assert task.agent_tools(q, "agent", position=0) == []


def test_fraction_split_is_seeded_and_complete() -> None:
    path = FIXTURES / "jsonl_no_split.jsonl"
    task = load_task("jsonl", path, seed=3)
    sizes = [len(task.splits()[s]) for s in ("train", "validation", "test")]
    assert sizes == [4, 2, 2]
    all_ids = sorted(q.id for qs in task.splits().values() for q in qs)
    assert all_ids == sorted(f"line-{i}" for i in range(1, 9))
    again = load_task("jsonl", path, seed=3)
    assert [q.id for q in again.split("train")] == [q.id for q in task.split("train")]
    other = load_task("jsonl", path, seed=4)
    assert [q.id for q in other.split("train")] != [q.id for q in task.split("train")]


def test_fraction_options() -> None:
    task = load_task(
        "jsonl", FIXTURES / "jsonl_no_split.jsonl", train_fraction=0.0, validation_fraction=0.0
    )
    assert len(task.split("test")) == 8
    with pytest.raises(TaskError, match="split 'train' of task 'jsonl' is empty"):
        task.split("train")
    with pytest.raises(TaskError, match="sum <= 1"):
        load_task(
            "jsonl", FIXTURES / "jsonl_no_split.jsonl", train_fraction=0.8, validation_fraction=0.5
        )


def test_default_metric_is_hotpot_f1() -> None:
    task = load_task("jsonl", FIXTURES / "jsonl_with_split.jsonl")
    q = task.split("test")[0]  # gold "Queen Ola"
    scored = task.score(q, "Ola")
    assert scored.metrics == {"f1": pytest.approx(2 / 3), "em": 0.0}
    assert scored.reward == pytest.approx(2 / 3)


def test_exact_metric() -> None:
    task = load_task("jsonl", FIXTURES / "jsonl_with_split.jsonl", metric="exact")
    q = task.split("test")[0]
    assert task.score(q, "the queen ola!").metrics == {"em": 1.0}
    assert task.score(q, "Ola").reward == 0.0


def test_locomo_metric_uses_the_category() -> None:
    task = load_task("jsonl", FIXTURES / "jsonl_locomo.jsonl", metric="locomo")
    multi, temporal = task.split("test")
    assert multi.context["locomo_category"] == 1
    assert temporal.category == "temporal"
    scored = task.score(multi, "dog, cat")
    assert scored.metrics["f1"] == 1.0
    assert set(scored.metrics) == {"f1", "bleu"}
    assert task.categories == ["multi-hop", "temporal"]


def test_locomo_metric_requires_category(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"question": "q", "answer": "a"}')
    with pytest.raises(TaskError, match=r"data.jsonl:1: field 'category' \(LoCoMo 1-4\)"):
        load_task("jsonl", path, metric="locomo")


def test_unknown_metric() -> None:
    with pytest.raises(TaskError, match="unknown metric 'bleu'"):
        load_task("jsonl", FIXTURES / "jsonl_no_split.jsonl", metric="bleu")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question": "q"', r"data.jsonl:2: not valid JSON"),
        ('["q", "a"]', r"data.jsonl:2: a line must be a JSON object"),
        ('{"answer": "a"}', r"data.jsonl:2: field 'question' is missing"),
        ('{"question": "q"}', r"data.jsonl:2: field 'answer' is missing"),
        ('{"question": "  ", "answer": "a"}', r"data.jsonl:2: field 'question' is empty"),
        ('{"question": "q", "answer": null}', r"data.jsonl:2: field 'answer' is missing"),
        ('{"question": "q", "answer": "a", "context": 5}', r"data.jsonl:2: 'context' must be"),
        (
            '{"question": "q", "answer": "a", "context": [{"title": "T"}]}',
            r"data.jsonl:2: context\[0\] needs a string 'title' and 'sentences'",
        ),
        ('{"id": "x", "question": "q", "answer": "a"}', r"data.jsonl:2: duplicate id 'x'"),
    ],
)
def test_bad_lines_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = write_lines(tmp_path, '{"id": "x", "question": "q0", "answer": "a0"}', line)
    with pytest.raises(TaskError, match=message):
        load_task("jsonl", path)


def test_split_on_some_lines_only(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        json.dumps({"question": "q1", "answer": "a", "split": "test"}),
        json.dumps({"question": "q2", "answer": "a"}),
    )
    with pytest.raises(TaskError, match="either every line has 'split' or none does"):
        load_task("jsonl", path)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="needs a data path"):
        load_task("jsonl")
    with pytest.raises(TaskError, match=f"data file not found: {tmp_path / 'none.jsonl'}"):
        load_task("jsonl", tmp_path / "none.jsonl")
    empty = write_lines(tmp_path, "", "  ")
    with pytest.raises(TaskError, match="has no questions"):
        load_task("jsonl", empty)
