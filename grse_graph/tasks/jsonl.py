"""The user's own data: one JSON object per line.

Fields: `question` and `answer` (required), `context` (a string, a list of strings, or a list of
`{title, sentences}` passages whose `sentences` is a list of strings or one string),
`category`, `id`, `split`. Either every line has `split` or none has; without it, questions are
shuffled with `seed` and cut by `train_fraction` / `validation_fraction` (the rest is test).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grse_graph.errors import TaskError
from grse_graph.tasks.base import Passage, ScoredAnswer, TaskQuestion
from grse_graph.tasks.locomo import LOCOMO_CATEGORY_NAMES, parse_categories
from grse_graph.tasks.passage_task import PassageTask
from grse_graph.tasks.scoring import METRIC_NAMES, score_with
from grse_graph.tasks.splits import SplitTable


class JsonlTask(PassageTask):
    """Questions from a JSONL file, scored with one metric (HotpotQA F1 by default)."""

    name = "jsonl"

    def __init__(self, splits: SplitTable, metric: str, categories: list[str]) -> None:
        super().__init__(splits)
        self.metric = metric
        self.categories = categories

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        """Score with the task's metric (hotpotqa, locomo or exact)."""
        return score_with(self.metric, question, prediction)


def _passages(value: Any, where: str) -> list[Passage]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Passage(title="", sentences=[value])]
    if not isinstance(value, list):
        raise TaskError(f"{where}: 'context' must be a string or a list")
    passages: list[Passage] = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            passages.append(Passage(title="", sentences=[item]))
            continue
        if not isinstance(item, Mapping):
            raise TaskError(f"{where}: context[{index}] must be a string or {{title, sentences}}")
        title = item.get("title", "")
        sentences = item.get("sentences")
        if isinstance(sentences, str):
            sentences = [sentences]
        if (
            not isinstance(title, str)
            or not isinstance(sentences, list)
            or not all(isinstance(s, str) for s in sentences)
        ):
            raise TaskError(
                f"{where}: context[{index}] needs a string 'title' and 'sentences' (strings)"
            )
        passages.append(Passage(title=title, sentences=list(sentences)))
    return passages


def _text(record: Mapping[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TaskError(f"{where}: field '{key}' is missing or not a string")
    text = str(value)
    if not text.strip():
        raise TaskError(f"{where}: field '{key}' is empty")
    return text


def _parse_line(
    record: Any, where: str, line_number: int, metric: str
) -> tuple[TaskQuestion, str | None]:
    if not isinstance(record, Mapping):
        raise TaskError(f"{where}: a line must be a JSON object")
    question = _text(record, "question", where)
    answer = _text(record, "answer", where)
    qid = _text(record, "id", where) if "id" in record else f"line-{line_number}"
    category_raw = record.get("category")
    context: dict[str, Any] = {}
    category: str | None
    if metric == "locomo":
        if category_raw is None:
            raise TaskError(
                f"{where}: field 'category' (LoCoMo 1-4) is required with metric=locomo"
            )
        number = parse_categories(category_raw, task_name=f"jsonl ({where})")
        if len(number) != 1:
            raise TaskError(f"{where}: field 'category' must name one LoCoMo category")
        context["locomo_category"] = number[0]
        category = LOCOMO_CATEGORY_NAMES[number[0]]
    elif category_raw is None:
        category = None
    else:
        category = _text(record, "category", where)
    split = _text(record, "split", where) if "split" in record else None
    return (
        TaskQuestion(
            id=qid,
            question=question,
            answer=answer,
            category=category,
            passages=_passages(record.get("context"), where),
            context=context,
        ),
        split,
    )


def load_jsonl(
    data: Path | None,
    *,
    metric: str = "hotpotqa",
    train_fraction: float = 0.5,
    validation_fraction: float = 0.25,
    seed: int = 0,
) -> JsonlTask:
    """Read the JSONL file at `data`; errors name the line."""
    if data is None:
        raise TaskError("task 'jsonl' needs a data path (--data PATH to a .jsonl file)")
    if metric not in METRIC_NAMES:
        raise TaskError(f"jsonl: unknown metric '{metric}' (known: {', '.join(METRIC_NAMES)})")
    path = Path(data)
    if not path.is_file():
        raise TaskError(f"jsonl: data file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"jsonl: cannot read {path}: {exc}") from exc
    parsed: list[tuple[TaskQuestion, str | None]] = []
    seen_ids: dict[str, int] = {}
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{line_number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskError(f"{where}: not valid JSON ({exc.msg})") from exc
        question, split = _parse_line(record, where, line_number, metric)
        if question.id in seen_ids:
            raise TaskError(
                f"{where}: duplicate id '{question.id}' (first on line {seen_ids[question.id]})"
            )
        seen_ids[question.id] = line_number
        parsed.append((question, split))
    if not parsed:
        raise TaskError(f"jsonl: {path} has no questions")
    with_split = [s is not None for _, s in parsed]
    if any(with_split) and not all(with_split):
        missing = next(i for i, has in enumerate(with_split) if not has)
        raise TaskError(
            f"jsonl: {path}: either every line has 'split' or none does "
            f"(question '{parsed[missing][0].id}' has none)"
        )
    if all(with_split):
        table: dict[str, list[TaskQuestion]] = {}
        for question, split in parsed:
            table.setdefault(str(split), []).append(question)
        splits = SplitTable("jsonl", table)
    else:
        splits = _fraction_split([q for q, _ in parsed], train_fraction, validation_fraction, seed)
    categories: list[str] = []
    for question, _ in parsed:
        if question.category is not None and question.category not in categories:
            categories.append(question.category)
    return JsonlTask(splits, metric, categories)


def _fraction_split(
    questions: list[TaskQuestion], train_fraction: float, validation_fraction: float, seed: int
) -> SplitTable:
    if not (0 <= train_fraction <= 1 and 0 <= validation_fraction <= 1) or (
        train_fraction + validation_fraction > 1
    ):
        raise TaskError(
            "jsonl: train_fraction and validation_fraction must be in [0, 1] with sum <= 1"
        )
    order = list(questions)
    random.Random(seed).shuffle(order)
    n_train = round(len(order) * train_fraction)
    n_validation = round(len(order) * validation_fraction)
    n_validation = min(n_validation, len(order) - n_train)
    return SplitTable(
        "jsonl",
        {
            "train": order[:n_train],
            "validation": order[n_train : n_train + n_validation],
            "test": order[n_train + n_validation :],
        },
    )
