"""Scoring JSONL records (one `prediction` / `answer` [/ `category`] object per line).

This is the engine behind `grse score`: read and validate every line first (a bad line is an error
naming its line number, never a zero), then score, then summarise. A LoCoMo answer takes the one
path training, `grse eval` and the baselines take (`locomo_scores`: scored as it is, as the
official scorer scores it), so an evaluation folder's `predictions.jsonl` (categories named,
`"temporal"`) scores here to the numbers of its `summary.json`; answers that carry a
dialogue-id citation are counted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from grse_graph.errors import ScoringError
from grse_graph.validation_text import describe_validation_error

from .analysis import carries_citation
from .hotpotqa import hotpot_em, hotpot_f1
from .locomo import locomo_category_number, locomo_scores


class Metric(StrEnum):
    """Which official scorer to apply."""

    HOTPOTQA = "hotpotqa"
    LOCOMO = "locomo"


class HotpotInput(BaseModel):
    """One HotpotQA input line; other fields are kept and echoed back."""

    model_config = ConfigDict(extra="allow", strict=True)
    prediction: StrictStr
    answer: StrictStr


class LocomoInput(BaseModel):
    """One LoCoMo input line; an integer answer is scored as its decimal text, as the official
    scorer does (`str(answer)`), because some gold answers in `locomo10.json` are numbers. The
    category is its number (1-4) or its name (`"temporal"`, as `grse eval` writes it)."""

    model_config = ConfigDict(extra="allow", strict=True)
    prediction: StrictStr
    answer: StrictStr | StrictInt
    category: StrictInt | StrictStr


class ScoredRecord(BaseModel):
    """One scored line: the input object as read, and its scores."""

    line_number: int
    record: dict[str, Any]
    category: int | None
    f1: float
    em: float | None = None
    bleu: float | None = None
    cited: bool = False

    def output_object(self) -> dict[str, Any]:
        """The input object plus `f1` and `em` (HotpotQA) or `f1` and `bleu` (LoCoMo)."""
        extra = {"em": self.em} if self.em is not None else {"bleu": self.bleu}
        return {**self.record, "f1": self.f1, **extra}


class ScoreGroup(BaseModel):
    """Means over a group of records (all records, or one LoCoMo category)."""

    count: int
    mean_f1: float
    mean_em: float | None = None
    mean_bleu: float | None = None
    cited_answers: int | None = Field(
        default=None, description="LoCoMo: answers carrying a dialogue-id citation"
    )


class ScoreSummary(BaseModel):
    """Summary of a scored file: overall means and, for LoCoMo, means per category."""

    metric: Metric
    overall: ScoreGroup
    per_category: dict[int, ScoreGroup] = Field(default_factory=dict)


def _parse_line(
    text: str, metric: Metric, where: str
) -> tuple[dict[str, Any], HotpotInput | LocomoInput]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScoringError(f"{where}: invalid JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise ScoringError(f"{where}: expected a JSON object, got {type(data).__name__}")
    model = HotpotInput if metric is Metric.HOTPOTQA else LocomoInput
    try:
        return data, model.model_validate(data)
    except ValidationError as error:
        raise ScoringError(f"{where}: {describe_validation_error(error)}") from None


def _score(
    parsed: HotpotInput | LocomoInput, line_number: int, record: dict[str, Any]
) -> ScoredRecord:
    if isinstance(parsed, HotpotInput):
        return ScoredRecord(
            line_number=line_number,
            record=record,
            category=None,
            f1=hotpot_f1(parsed.prediction, parsed.answer),
            em=hotpot_em(parsed.prediction, parsed.answer),
        )
    category = locomo_category_number(parsed.category)
    scores = locomo_scores(parsed.prediction, str(parsed.answer), category)
    return ScoredRecord(
        line_number=line_number,
        record=record,
        category=category,
        f1=scores.f1,
        bleu=scores.bleu,
        cited=carries_citation(parsed.prediction),
    )


def score_lines(lines: Iterable[str], metric: Metric, source: str) -> list[ScoredRecord]:
    """Validate and score every non-blank JSONL line (line numbers start at 1).

    Raises `ScoringError` naming `source` and the line for bad JSON, a non-object, a missing or
    mistyped field, or an unscorable category; and when there is no record at all.
    """
    scored: list[ScoredRecord] = []
    for line_number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        where = f"{source} line {line_number}"
        record, parsed = _parse_line(text, metric, where)
        try:
            scored.append(_score(parsed, line_number, record))
        except ScoringError as error:
            raise ScoringError(f"{where}: {error}") from None
    if not scored:
        raise ScoringError(f"{source}: no records to score")
    return scored


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _group(records: list[ScoredRecord], metric: Metric) -> ScoreGroup:
    ems = [r.em for r in records if r.em is not None]
    bleus = [r.bleu for r in records if r.bleu is not None]
    return ScoreGroup(
        count=len(records),
        mean_f1=_mean([r.f1 for r in records]),
        mean_em=_mean(ems) if ems else None,
        mean_bleu=_mean(bleus) if bleus else None,
        cited_answers=sum(r.cited for r in records) if metric is Metric.LOCOMO else None,
    )


def summarize(records: list[ScoredRecord], metric: Metric) -> ScoreSummary:
    """Overall means and, for LoCoMo, means per category (categories in ascending order)."""
    if not records:
        raise ScoringError("cannot summarise zero records")
    per_category: dict[int, ScoreGroup] = {}
    if metric is Metric.LOCOMO:
        categories = sorted({r.category for r in records if r.category is not None})
        per_category = {
            c: _group([r for r in records if r.category == c], metric) for c in categories
        }
    return ScoreSummary(metric=metric, overall=_group(records, metric), per_category=per_category)


def _format_group(label: str, group: ScoreGroup) -> str:
    parts = [f"{label}: n={group.count}", f"F1={group.mean_f1:.4f}"]
    if group.mean_em is not None:
        parts.append(f"EM={group.mean_em:.4f}")
    if group.mean_bleu is not None:
        parts.append(f"BLEU={group.mean_bleu:.4f}")
    if group.cited_answers is not None:
        parts.append(f"cited={group.cited_answers}")
    return "  ".join(parts)


def format_summary(summary: ScoreSummary) -> str:
    """Human-readable summary lines (no trailing newline)."""
    lines = [_format_group(f"{summary.metric.value} overall", summary.overall)]
    lines += [
        _format_group(f"  category {category}", group)
        for category, group in summary.per_category.items()
    ]
    return "\n".join(lines)
