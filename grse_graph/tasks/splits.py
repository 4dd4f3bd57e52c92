"""Named splits of a task, with one-line errors for unknown or empty splits; splits by counts
(in order) or by positions in the source's order."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grse_graph.errors import TaskError
from grse_graph.tasks.base import SPLIT_NAMES, TaskQuestion

RecordT = TypeVar("RecordT")


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


class PositionRange(BaseModel):
    """The records at positions `first`..`last` (0-based, both included) of a source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first: int = Field(ge=0)
    last: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> PositionRange:
        if self.last < self.first:
            raise ValueError(f"last ({self.last}) is before first ({self.first})")
        return self

    @property
    def size(self) -> int:
        """How many positions the range holds."""
        return self.last - self.first + 1

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"


class PositionSplits(BaseModel):
    """Each split as a range of positions in the source's own order (HotpotQA: the official dev
    file's order, as the paper's Table 7 gives its test questions)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    train: PositionRange
    validation: PositionRange
    test: PositionRange

    @model_validator(mode="after")
    def _disjoint(self) -> PositionSplits:
        ranges = sorted(self.ranges().items(), key=lambda item: item[1].first)
        for (name, before), (after_name, after) in itertools.pairwise(ranges):
            if after.first <= before.last:
                raise ValueError(f"{name} ({before}) and {after_name} ({after}) overlap")
        return self

    def ranges(self) -> dict[str, PositionRange]:
        """Split name -> its range, in the order train, validation, test."""
        return {name: getattr(self, name) for name in SPLIT_NAMES}

    def end(self) -> int:
        """One past the last position any split reads."""
        return max(r.last for r in self.ranges().values()) + 1

    def __str__(self) -> str:
        return ", ".join(f"{name} {r}" for name, r in self.ranges().items())


def select_positions(
    task_name: str, records: Iterable[RecordT], positions: PositionSplits, source: str
) -> dict[str, list[tuple[int, RecordT]]]:
    """Each split's (position, record) pairs, read in one pass that stops after the last
    position needed; a source shorter than that is a `TaskError`."""
    owner = {
        index: name
        for name, r in positions.ranges().items()
        for index in range(r.first, r.last + 1)
    }
    chosen: dict[str, list[tuple[int, RecordT]]] = {name: [] for name in SPLIT_NAMES}
    end = positions.end()
    seen = 0
    for index, record in enumerate(records):
        if index >= end:
            break
        seen = index + 1
        name = owner.get(index)
        if name is not None:
            chosen[name].append((index, record))
    if seen < end:
        raise TaskError(
            f"task '{task_name}': {source} has {seen} records; the splits ({positions}) need "
            f"positions up to {end - 1}"
        )
    return chosen
