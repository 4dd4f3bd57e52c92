"""Named splits of a task, with one-line errors for unknown or empty splits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.errors import TaskError
from grse_graph.tasks.base import TaskQuestion


class SplitTable:
    """Immutable mapping of split name -> questions, owned by one task."""

    def __init__(self, task_name: str, splits: Mapping[str, Sequence[TaskQuestion]]) -> None:
        self._task_name = task_name
        self._splits: dict[str, tuple[TaskQuestion, ...]] = {
            name: tuple(questions) for name, questions in splits.items()
        }
        if not any(self._splits.values()):
            raise TaskError(f"task '{task_name}' has no questions in any split")

    def as_mapping(self) -> Mapping[str, Sequence[TaskQuestion]]:
        """All splits (an empty split is listed but `get` refuses it)."""
        return dict(self._splits)

    def get(self, name: str) -> Sequence[TaskQuestion]:
        """One split; `TaskError` when it is unknown or empty."""
        if name not in self._splits:
            known = ", ".join(self._splits)
            raise TaskError(f"task '{self._task_name}' has no split '{name}' (known: {known})")
        questions = self._splits[name]
        if not questions:
            raise TaskError(f"split '{name}' of task '{self._task_name}' is empty")
        return questions

    def all_questions(self) -> list[TaskQuestion]:
        """Every question of every split, in split order."""
        return [q for questions in self._splits.values() for q in questions]


def split_by_counts(
    task_name: str,
    questions: Sequence[TaskQuestion],
    train: int,
    validation: int,
    test: int | None,
) -> SplitTable:
    """Split in order: the first `train`, the next `validation`, then `test` (None = the rest)."""
    for label, size in (("train", train), ("validation", validation), ("test", test)):
        if size is not None and size < 0:
            raise TaskError(f"task '{task_name}': split size {label}={size} must be >= 0")
    end_validation = train + validation
    end_test = len(questions) if test is None else end_validation + test
    return SplitTable(
        task_name,
        {
            "train": questions[:train],
            "validation": questions[train:end_validation],
            "test": questions[end_validation:end_test],
        },
    )


class SplitTableTask:
    """Base of the built-in tasks: `splits()` and `split(name)` served from a `SplitTable`."""

    def __init__(self, splits: SplitTable) -> None:
        self._splits = splits

    def splits(self) -> Mapping[str, Sequence[TaskQuestion]]:
        """Split name -> questions."""
        return self._splits.as_mapping()

    def split(self, name: str) -> Sequence[TaskQuestion]:
        """One split; `TaskError` if unknown or empty."""
        return self._splits.get(name)
