"""HotpotQA task: reading the official format, level filter, splits, rendering, HF rows."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from grse_graph.errors import TaskError
from grse_graph.tasks import Task, load_task, record_from_hf_row
from grse_graph.tasks.hotpotqa import HF_CONFIG, HF_DATASET, HF_SPLIT, load_hotpotqa

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tasks"
MINI = FIXTURES / "hotpot_mini.json"


def small_splits(**extra: Any) -> Task:
    return load_task("hotpotqa", MINI, train_size=2, validation_size=1, **extra)


def test_level_filter_and_file_order_splits() -> None:
    task = small_splits()
    ids = {name: [q.id for q in qs] for name, qs in task.splits().items()}
    # h3 is level "medium" and is dropped by the default hard filter.
    assert ids == {"train": ["h1", "h2"], "validation": ["h4"], "test": ["h5", "h6"]}
    assert task.kind == "passages"
    assert task.categories == ["bridge", "comparison"]


def test_level_all_keeps_every_record_and_test_size_limits() -> None:
    task = small_splits(level="all", test_size=2)
    ids = {name: [q.id for q in qs] for name, qs in task.splits().items()}
    assert ids == {"train": ["h1", "h2"], "validation": ["h3"], "test": ["h4", "h5"]}


def test_default_sizes_leave_validation_and_test_empty_on_small_file() -> None:
    task = load_task("hotpotqa", MINI)
    assert len(task.split("train")) == 5
    with pytest.raises(TaskError, match="split 'validation' of task 'hotpotqa' is empty"):
        task.split("validation")


def test_unknown_split_is_an_error() -> None:
    with pytest.raises(TaskError, match="no split 'dev'"):
        small_splits().split("dev")


def test_question_fields() -> None:
    q = small_splits().split("train")[0]
    assert (q.id, q.question, q.answer, q.category) == (
        "h1",
        "Where was the author of Rain Ledger born?",
        "Brookvale",
        "bridge",
    )
    assert [p.title for p in q.passages] == ["Rain Ledger", "Ada Finch", "Kettle Point"]
    assert q.context["supporting_titles"] == ["Ada Finch", "Rain Ledger"]


def test_render_input_exact_format() -> None:
    task = small_splits()
    q = task.split("train")[0]
    assert task.render_input(q) == (
        "[Passage 1] Rain Ledger\n"
        "Rain Ledger is a 1990 novel by Ada Finch. It won a small prize.\n\n"
        "[Passage 2] Ada Finch\n"
        "Ada Finch is a writer. She was born in Brookvale.\n\n"
        "[Passage 3] Kettle Point\n"
        "Kettle Point is a cape.\n\n"
        "Question: Where was the author of Rain Ledger born?"
    )
    assert task.render_full_context(q).startswith("[Passage 1] Rain Ledger\n")
    assert "Question:" not in task.render_full_context(q)
    assert task.agent_tools(q, "agent_1", position=0) == []


def test_score_is_hotpot_f1_with_em() -> None:
    task = small_splits()
    q = task.split("train")[0]
    exact = task.score(q, "Brookvale")
    assert exact.reward == 1.0
    assert exact.metrics == {"f1": 1.0, "em": 1.0}
    partial = task.score(q, "in Brookvale town")
    assert partial.metrics["em"] == 0.0
    assert partial.reward == pytest.approx(0.5)  # precision 1/3 ("in" and "town" extra), recall 1
    yes_no = task.split("train")[1]  # gold "yes"
    assert task.score(yes_no, "no").reward == 0.0


def test_missing_file_names_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(TaskError, match=f"data file not found: {missing}"):
        load_task("hotpotqa", missing)


def test_corrupt_json_names_path_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"_id": "x",\n oops]')
    with pytest.raises(TaskError, match=r"bad.json is not valid JSON \(line 2"):
        load_task("hotpotqa", bad)


def test_record_missing_field_names_record(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps([{"_id": "x1", "question": "q", "level": "hard", "context": []}]))
    with pytest.raises(TaskError, match=r"record 0 \(_id x1\): field 'answer'"):
        load_task("hotpotqa", path)


def test_bad_context_entry(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    record = {"_id": "x1", "question": "q", "answer": "a", "level": "hard", "context": [["T"]]}
    path.write_text(json.dumps([record]))
    with pytest.raises(TaskError, match=r"context\[0\] must be \[title, \[sentences\]\]"):
        load_task("hotpotqa", path)


def test_no_records_of_level(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps([]))
    with pytest.raises(TaskError, match="no records with level 'hard'"):
        load_task("hotpotqa", path)


def test_hf_row_conversion_matches_official_layout() -> None:
    rows = json.loads((FIXTURES / "hotpot_hf_rows.json").read_text())
    record = record_from_hf_row(rows[0])
    assert record == {
        "_id": "hf1",
        "question": "Where was the author of Rain Ledger born?",
        "answer": "Brookvale",
        "type": "bridge",
        "level": "hard",
        "supporting_facts": [["Rain Ledger", 0], ["Ada Finch", 1]],
        "context": [
            ["Rain Ledger", ["Rain Ledger is a 1990 novel by Ada Finch."]],
            ["Ada Finch", ["Ada Finch is a writer.", " She was born in Brookvale."]],
        ],
    }


def test_hf_row_with_wrong_layout() -> None:
    with pytest.raises(TaskError, match="unexpected row layout"):
        record_from_hf_row({"id": "x", "question": "q", "answer": "a"})


def test_hf_route_through_injected_loader() -> None:
    rows = json.loads((FIXTURES / "hotpot_hf_rows.json").read_text())
    calls: list[tuple[Any, ...]] = []

    def loader(path: str, name: str, split: str) -> Iterable[Mapping[str, Any]]:
        calls.append((path, name, split))
        return rows

    task = load_hotpotqa(None, loader=loader, train_size=1, validation_size=0)
    assert calls == [(HF_DATASET, HF_CONFIG, HF_SPLIT)]
    # hf2 is level "medium": only hf1 is kept.
    assert [q.id for q in task.split("train")] == ["hf1"]


def test_hf_route_unreachable_hub_is_a_task_error() -> None:
    def loader(path: str, name: str, split: str) -> Iterable[Mapping[str, Any]]:
        raise ConnectionError("Couldn't reach the Hub\nmore details")

    with pytest.raises(
        TaskError, match=r"cannot load hotpotqa/hotpot_qa .*Couldn.t reach the Hub;"
    ):
        load_hotpotqa(None, loader=loader)


def test_hf_route_without_datasets_package_names_the_extra() -> None:
    if importlib.util.find_spec("datasets") is not None:
        pytest.skip("the 'datasets' package is installed here")
    with pytest.raises(TaskError, match=r"pip install 'grse-graph\[hf\]'"):
        load_task("hotpotqa")


def _hf_row(index: int, level: str = "hard") -> dict[str, Any]:
    return {
        "id": f"q{index}",
        "question": f"Which question is number {index}?",
        "answer": str(index),
        "type": "bridge",
        "level": level,
        "supporting_facts": {"title": ["Counting"], "sent_id": [0]},
        "context": {"title": ["Counting"], "sentences": [[f"This is number {index}."]]},
    }


POSITIONS = {
    "train": {"first": 0, "last": 2},
    "validation": {"first": 3, "last": 4},
    "test": {"first": 6, "last": 8},
}


def test_position_splits_take_the_records_at_their_positions() -> None:
    rows = [_hf_row(i) for i in range(12)]
    task = load_hotpotqa(None, positions=POSITIONS, loader=lambda *a, **k: rows)
    ids = {name: [q.id for q in qs] for name, qs in task.splits().items()}
    # Position 5 belongs to no split; positions after the test's last are not read.
    assert ids == {
        "train": ["q0", "q1", "q2"],
        "validation": ["q3", "q4"],
        "test": ["q6", "q7", "q8"],
    }


def test_position_splits_refuse_a_short_source_and_another_level() -> None:
    short = [_hf_row(i) for i in range(7)]
    with pytest.raises(TaskError, match=r"has 7 records; the splits .* need positions up to 8"):
        load_hotpotqa(None, positions=POSITIONS, loader=lambda *a, **k: short)
    mixed = [_hf_row(i, level="medium" if i == 7 else "hard") for i in range(9)]
    with pytest.raises(TaskError, match=r"record 7 \(test split\) has level 'medium'"):
        load_hotpotqa(None, positions=POSITIONS, loader=lambda *a, **k: mixed)


def test_position_splits_refuse_overlapping_ranges() -> None:
    overlapping = {**POSITIONS, "validation": {"first": 2, "last": 4}}
    with pytest.raises(TaskError, match=r"positions: .*overlap"):
        load_hotpotqa(None, positions=overlapping, loader=lambda *a, **k: [])
