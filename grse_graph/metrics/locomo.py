"""LoCoMo answer metrics: per-category F1 equal to the official `task_eval/evaluation.py`,
and the smoothed sentence BLEU used by the MASkills / GRSE harness.

Normalisation (official order): remove commas, lowercase, drop ASCII punctuation, replace the words
a / an / the / and (word boundaries of the `regex` module, as the official code uses) by a space,
collapse whitespace; then every token is Porter-stemmed with NLTK's `PorterStemmer` (no NLTK data
download is needed).

F1 per category: 2 and 4 token F1; 3 the gold is cut at its first `;`, then token F1; 1 both sides
are split on `,` (parts stripped, empty parts KEPT as the official code does), and the best F1
over prediction parts is averaged over gold parts. Category 5 (adversarial) is excluded.

`locomo_scores` is the one scoring path of a LoCoMo answer (training rewards, `grse eval`,
the baselines and `grse score`): the prediction is scored as it is, as the official scorer
scores it. A dialogue-id citation on the answer line (`[D3:5]`) is not stripped: the official
normalisation turns it into a token (`d35`) that counts against precision. Reports count the
answers that carry one (`grse_graph.metrics.analysis.carries_citation`).
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Callable

import regex
from pydantic import BaseModel, ConfigDict

from grse_graph.errors import ScoringError

from ._inputs import require_text

SCORED_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
"""The names of the scored categories (the labels an evaluation's predictions carry)."""

_PUNCTUATION = frozenset(string.punctuation)
# The official scorer uses the `regex` module; its \b differs from `re` around combining marks.
_STOPWORDS = regex.compile(r"\b(a|an|the|and)\b")
_MAX_BLEU_ORDER = 4


def normalize_locomo(s: str) -> str:
    """Normalise an answer the way the official LoCoMo scorer does (before stemming)."""
    text = require_text(s, "answer").replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _STOPWORDS.sub(" ", text)
    return " ".join(text.split())


# NLTK is imported where a score is computed: importing it costs about 2 s, a third of the
# `grse` command's start-up, and most commands score nothing.
def _stemmed_tokens(text: str) -> list[str]:
    from nltk.stem import PorterStemmer

    stemmer = PorterStemmer()
    return [stemmer.stem(token) for token in normalize_locomo(text).split()]


def _token_f1(prediction: str, gold: str) -> float:
    pred_tokens = _stemmed_tokens(prediction)
    gold_tokens = _stemmed_tokens(gold)
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _token_bleu(prediction: str, gold: str) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    hypothesis = _stemmed_tokens(prediction)
    reference = _stemmed_tokens(gold)
    if not hypothesis or not reference:
        return 0.0
    order = min(_MAX_BLEU_ORDER, len(reference), len(hypothesis))
    score = sentence_bleu(
        [reference],
        hypothesis,
        weights=(1.0 / order,) * order,
        smoothing_function=SmoothingFunction().method1,
    )
    return float(score)


def _check_category(category: object) -> int:
    if isinstance(category, bool) or not isinstance(category, int):
        raise ScoringError(f"LoCoMo category must be an integer 1-4, got {category!r}")
    if category == 5:
        raise ScoringError("LoCoMo category 5 (adversarial) is excluded from scoring")
    if category not in SCORED_CATEGORIES:
        raise ScoringError(f"LoCoMo category must be 1, 2, 3 or 4, got {category}")
    return category


def _best_match_mean(
    prediction_parts: list[str], gold_parts: list[str], score: Callable[[str, str], float]
) -> float:
    best = [max(score(part, gold_part) for part in prediction_parts) for gold_part in gold_parts]
    return math.fsum(best) / len(best)


def _cut_at_semicolon(gold: str) -> str:
    return gold.split(";", 1)[0].strip()


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    """Official LoCoMo F1 of `prediction` against `gold` for question category 1-4."""
    prediction = require_text(prediction, "prediction")
    gold = require_text(gold, "gold answer")
    category = _check_category(category)
    if category == 1:
        prediction_parts = [part.strip() for part in prediction.split(",")]
        gold_parts = [part.strip() for part in gold.split(",")]
        return _best_match_mean(prediction_parts, gold_parts, _token_f1)
    if category == 3:
        gold = _cut_at_semicolon(gold)
    return _token_f1(prediction, gold)


def locomo_bleu(prediction: str, gold: str, category: int) -> float:
    """Smoothed sentence BLEU of `prediction` against `gold` for LoCoMo category 1-4.

    NLTK `sentence_bleu([ref], hyp)` over the normalised, Porter-stemmed tokens with uniform
    weights over n = min(4, len(ref), len(hyp)) and `SmoothingFunction().method1`; 0 when either
    side has no token. Category 3 cuts the gold at its first `;`. Category 1 splits both sides on
    `,`, drops parts that are empty after stripping, and averages over gold parts the best BLEU over
    prediction parts (0 when either side has no part left).
    """
    prediction = require_text(prediction, "prediction")
    gold = require_text(gold, "gold answer")
    category = _check_category(category)
    if category == 1:
        prediction_parts = [part.strip() for part in prediction.split(",") if part.strip()]
        gold_parts = [part.strip() for part in gold.split(",") if part.strip()]
        if not prediction_parts or not gold_parts:
            return 0.0
        return _best_match_mean(prediction_parts, gold_parts, _token_bleu)
    if category == 3:
        gold = _cut_at_semicolon(gold)
    return _token_bleu(prediction, gold)


def locomo_category_number(category: object) -> int:
    """A scored category given as its number (1-4) or its name (`CATEGORY_NAMES`)."""
    if isinstance(category, str):
        numbers = {name: number for number, name in CATEGORY_NAMES.items()}
        if category.strip().lower() not in numbers:
            raise ScoringError(
                f"LoCoMo category must be 1-4 or one of {', '.join(CATEGORY_NAMES.values())}, "
                f"got {category!r}"
            )
        return numbers[category.strip().lower()]
    return _check_category(category)


class LocomoScores(BaseModel):
    """The scores of one LoCoMo answer: category F1, smoothed BLEU and their mean (the reward)."""

    model_config = ConfigDict(frozen=True)

    f1: float
    bleu: float

    @property
    def reward(self) -> float:
        """(F1 + BLEU) / 2, the training reward."""
        return (self.f1 + self.bleu) / 2


def locomo_scores(prediction: str, gold: str, category: int) -> LocomoScores:
    """F1 and smoothed BLEU of `prediction` as it is (citations included, as the official
    scorer has it) against `gold` for category 1-4: the one scoring path of a LoCoMo answer."""
    return LocomoScores(
        f1=locomo_f1(prediction, gold, category), bleu=locomo_bleu(prediction, gold, category)
    )
