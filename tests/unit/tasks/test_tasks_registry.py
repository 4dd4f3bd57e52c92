"""`load_task`: names, options, protocol conformance."""

from __future__ import annotations

from pathlib import Path

import pytest

from grse_graph.errors import TaskError
from grse_graph.tasks import TASK_NAMES, Task, load_task, task_options

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tasks"


def test_unknown_task_is_one_line_error() -> None:
    with pytest.raises(TaskError) as info:
        load_task("squad")
    assert str(info.value) == "unknown task 'squad' (known: hotpotqa, locomo, demo, jsonl)"


def test_unknown_option_lists_the_options() -> None:
    with pytest.raises(TaskError, match="task 'demo' has no option levels"):
        load_task("demo", levels="hard")


def test_options_per_task() -> None:
    assert "level" in task_options("hotpotqa")
    assert "category" in task_options("locomo")
    assert "metric" in task_options("jsonl")
    assert "loader" not in task_options("hotpotqa")


@pytest.mark.parametrize(
    ("name", "data", "options"),
    [
        ("hotpotqa", FIXTURES / "hotpot_mini.json", {"train_size": 2, "validation_size": 1}),
        ("locomo", FIXTURES / "locomo_mini.json", {"train_conversations": 1}),
        ("demo", None, {}),
        ("jsonl", FIXTURES / "jsonl_with_split.jsonl", {}),
    ],
)
def test_every_builtin_satisfies_the_protocol(
    name: str, data: Path | None, options: dict[str, object]
) -> None:
    task = load_task(name, data, **options)
    assert isinstance(task, Task)
    assert task.name == name
    assert task.kind in ("passages", "conversation", "mixed")
    assert isinstance(task.categories, list)
    question = next(q for qs in task.splits().values() for q in qs)
    assert question.question in task.render_input(question)
    assert isinstance(task.render_full_context(question), str)
    scored = task.score(question, question.answer)
    assert scored.reward == 1.0
    assert set(TASK_NAMES) == {"hotpotqa", "locomo", "demo", "jsonl"}
