"""The HotpotQA distractor task (official JSON by path, or the Hugging Face dataset).

Records keep the source's order and are filtered by level (`hard` by default). They are split
in order (train = first 100, validation = next 50, test = the rest; sizes are options) or, with
`positions`, by their positions in the source (the paper's Table 7: dev positions 0-99 train,
100-149 validation, 150-649 test; the Hugging Face `validation` split is the official dev file
in its order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grse_graph.errors import TaskError
from grse_graph.tasks.base import Passage, ScoredAnswer, TaskQuestion
from grse_graph.tasks.io import read_json
from grse_graph.tasks.passage_task import PassageTask
from grse_graph.tasks.scoring import score_hotpotqa
from grse_graph.tasks.splits import (
    PositionSplits,
    SplitTable,
    select_positions,
    split_by_counts,
)
from grse_graph.validation_text import describe_validation_error

HF_DATASET = "hotpotqa/hotpot_qa"
HF_CONFIG = "distractor"
HF_SPLIT = "validation"
OFFICIAL_FILE = "hotpot_dev_distractor_v1.json"
OFFICIAL_SOURCE = "https://hotpotqa.github.io"
"""The official dev distractor file and where it is published (the paper's Table 7)."""
HOTPOT_CATEGORIES = ["bridge", "comparison"]

# A loader with the signature of `datasets.load_dataset(path, name, split=...)`.
DatasetLoader = Callable[..., Iterable[Mapping[str, Any]]]


class HotpotQATask(PassageTask):
    """HotpotQA questions with their ten passages; reward = official token F1."""

    name = "hotpotqa"

    def __init__(self, splits: SplitTable) -> None:
        super().__init__(splits)
        self.categories = list(HOTPOT_CATEGORIES)

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        """Reward = HotpotQA F1; metrics f1 and em."""
        return score_hotpotqa(prediction, question.answer)


def _field(record: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind):
        raise TaskError(f"{where}: field '{key}' is missing or has the wrong type")
    return value


def question_from_record(record: Any, where: str) -> TaskQuestion:
    """One official-format record -> `TaskQuestion` (category = the HotpotQA `type`)."""
    if not isinstance(record, Mapping):
        raise TaskError(f"{where}: a record must be an object")
    qid = _field(record, "_id", str, where)
    where = f"{where} (_id {qid})"
    question = _field(record, "question", str, where)
    answer = _field(record, "answer", str, where)
    context = _field(record, "context", list, where)
    passages: list[Passage] = []
    for index, item in enumerate(context):
        if (
            not isinstance(item, list | tuple)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not isinstance(item[1], list)
            or not all(isinstance(s, str) for s in item[1])
        ):
            raise TaskError(f"{where}: context[{index}] must be [title, [sentences]]")
        passages.append(Passage(title=item[0], sentences=list(item[1])))
    facts = record.get("supporting_facts") or []
    titles = sorted({f[0] for f in facts if isinstance(f, list | tuple) and f})
    qtype = record.get("type")
    return TaskQuestion(
        id=qid,
        question=question,
        answer=answer,
        category=qtype if isinstance(qtype, str) else None,
        passages=passages,
        context={
            "level": record.get("level"),
            "supporting_titles": titles,
            "supporting_facts": [list(f) for f in facts if isinstance(f, list | tuple)],
        },
    )


def record_from_hf_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A Hugging Face `hotpot_qa` row (columnar context and facts) -> the official JSON record."""
    try:
        context = row["context"]
        facts = row["supporting_facts"]
        return {
            "_id": row["id"],
            "question": row["question"],
            "answer": row["answer"],
            "type": row.get("type"),
            "level": row.get("level"),
            "supporting_facts": [
                [title, sent_id]
                for title, sent_id in zip(facts["title"], facts["sent_id"], strict=True)
            ],
            "context": [
                [title, list(sentences)]
                for title, sentences in zip(context["title"], context["sentences"], strict=True)
            ],
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise TaskError(f"{HF_DATASET}: unexpected row layout ({exc!r})") from exc


def _questions(records: Iterable[Any], source: str, level: str | None) -> list[TaskQuestion]:
    kept: list[TaskQuestion] = []
    for index, record in enumerate(records):
        if level is not None and isinstance(record, Mapping) and record.get("level") != level:
            continue
        kept.append(question_from_record(record, f"{source} record {index}"))
    if not kept:
        wanted = f" with level '{level}'" if level is not None else ""
        raise TaskError(f"hotpotqa: no records{wanted} in {source}")
    return kept


def load_hotpotqa(
    data: Path | None,
    *,
    level: str | None = "hard",
    train_size: int = 100,
    validation_size: int = 50,
    test_size: int | None = None,
    positions: PositionSplits | Mapping[str, Any] | None = None,
    loader: DatasetLoader | None = None,
) -> HotpotQATask:
    """Load the official distractor JSON at `data`, or the Hugging Face dataset when `data` is
    None. `level=None` or `"all"` keeps every level; `test_size=None` = all remaining records.
    `positions` (a `PositionSplits` or its JSON form) splits by position in the source's order
    instead of by the sizes. `loader` replaces `datasets.load_dataset` (for tests and mirrors)."""
    wanted_level = None if level in (None, "all", "") else level
    if data is not None:
        path = Path(data)
        raw = read_json(path, task_name="hotpotqa")
        if not isinstance(raw, list):
            raise TaskError(f"hotpotqa: {path} must hold a JSON list of records")
        records: Iterable[Any] = raw
        source = str(path)
    else:
        records = (record_from_hf_row(r) for r in _load_hf_rows(loader))
        source = f"{HF_DATASET} ({HF_SPLIT})"
    if positions is not None:
        return HotpotQATask(
            _split_by_positions(records, source, _positions(positions), wanted_level)
        )
    questions = _questions(records, source, wanted_level)
    return HotpotQATask(
        split_by_counts("hotpotqa", questions, train_size, validation_size, test_size)
    )


def _positions(positions: PositionSplits | Mapping[str, Any]) -> PositionSplits:
    if isinstance(positions, PositionSplits):
        return positions
    try:
        return PositionSplits.model_validate(positions)
    except ValidationError as error:
        raise TaskError(f"hotpotqa: positions: {describe_validation_error(error)}") from None


def _split_by_positions(
    records: Iterable[Any], source: str, positions: PositionSplits, level: str | None
) -> SplitTable:
    """The splits at their positions. A positioned record of another level is an error, not a
    smaller split: the positions name the dev file's questions, all of them `hard`."""
    chosen = select_positions("hotpotqa", records, positions, source)
    splits: dict[str, list[TaskQuestion]] = {}
    for name, pairs in chosen.items():
        splits[name] = []
        for index, record in pairs:
            found = record.get("level") if isinstance(record, Mapping) else None
            if level is not None and found != level:
                raise TaskError(
                    f"hotpotqa: {source} record {index} ({name} split) has level {found!r}, "
                    f"not {level!r}: the positions ({positions}) index questions of that level"
                )
            splits[name].append(question_from_record(record, f"{source} record {index}"))
    return SplitTable("hotpotqa", splits)


def _load_hf_rows(loader: DatasetLoader | None) -> Iterable[Mapping[str, Any]]:
    if loader is None:
        try:
            from datasets import load_dataset  # optional extra `hf`
        except ImportError as exc:
            raise TaskError(
                "hotpotqa: no data path given and the Hugging Face route needs the 'datasets' "
                "package (pip install 'grse-graph[hf]'); or pass a local "
                f"{OFFICIAL_FILE} (from {OFFICIAL_SOURCE})"
            ) from exc
        loader = load_dataset
    try:
        return loader(HF_DATASET, HF_CONFIG, split=HF_SPLIT)
    except TaskError:
        raise
    except Exception as exc:  # the hub raises many types: offline, auth, missing config
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise TaskError(
            f"hotpotqa: cannot load {HF_DATASET} ({HF_CONFIG}, {HF_SPLIT}) from the Hugging Face "
            f"hub: {first_line}; pass a local {OFFICIAL_FILE} (from {OFFICIAL_SOURCE}) instead"
        ) from exc
