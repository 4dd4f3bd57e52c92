"""Answer-level analyses used in reports: answer states, evidence citation rate, and whether an
answer carries a dialogue-id citation."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from grse_graph.errors import ScoringError

from ._inputs import require_text

AnswerState = Literal["declined", "correct", "wrong"]

DECLINE_PHRASES: tuple[str, ...] = (
    "not mentioned",
    "not specified",
    "not available",
    "not found",
    "not stated",
    "no information",
    "unknown",
    "cannot be determined",
)
CORRECT_F1_THRESHOLD = 0.5

DIALOGUE_ID = re.compile(r"\[D\d+:\d+\]")
# Any dialogue id on an answer line, bracketed or not: `D3:5`, `[D3:5]`, `(D3:5, D4:1)`.
ANSWER_CITATION = re.compile(r"\bD\d+:\d+\b")


def answer_state(prediction: str, f1: float) -> AnswerState:
    """Classify an answer for analysis.

    `declined` when the prediction is empty or whitespace, or contains (case-insensitively, as a
    substring) one of `DECLINE_PHRASES`; this takes precedence over the score. Otherwise `correct`
    when `f1 >= 0.5`, else `wrong`. `f1` must be a number in [0, 1].
    """
    text = require_text(prediction, "prediction")
    if isinstance(f1, bool) or not isinstance(f1, int | float) or not 0.0 <= f1 <= 1.0:
        raise ScoringError(f"f1 must be a number in [0, 1], got {f1!r}")
    lowered = text.lower()
    if not lowered.strip() or any(phrase in lowered for phrase in DECLINE_PHRASES):
        return "declined"
    return "correct" if f1 >= CORRECT_F1_THRESHOLD else "wrong"


def cites_dialogue(text: str) -> bool:
    """True when `text` contains at least one dialogue id `[D<session>:<turn>]`.

    The id is matched exactly as the LoCoMo grep tool renders it: `[`, `D`, one or more digits,
    `:`, one or more digits, `]`, with no spaces (so `[D3:12]` counts; `[d3:12]`, `[D3: 12]` and
    `D3:12` without brackets do not).
    """
    return DIALOGUE_ID.search(require_text(text, "response")) is not None


def evidence_citation_rate(texts: Sequence[str]) -> float:
    """Share of responses that cite at least one dialogue id (see `cites_dialogue`).

    Returns (number of texts with at least one `[D<session>:<turn>]`) / (number of texts), a
    value in [0, 1].
    A response citing several ids counts once. An empty sequence is an error, not a rate of 0.
    """
    if isinstance(texts, str):
        raise ScoringError("texts must be a sequence of responses, got a single string")
    if len(texts) == 0:
        raise ScoringError("evidence_citation_rate needs at least one response, got none")
    citing = [cites_dialogue(text) for text in texts]
    return math.fsum(1.0 for cited in citing if cited) / len(citing)


def carries_citation(answer: str) -> bool:
    """True when an answer carries a dialogue-id citation (`D3:5`, `[D3:5]`, `(D3:5; D4:1)`).

    Such an answer is scored as it is, as the official LoCoMo scorer scores it (the id becomes
    a token that counts against precision); reports count these answers.
    """
    return ANSWER_CITATION.search(require_text(answer, "answer")) is not None
