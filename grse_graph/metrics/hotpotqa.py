"""HotpotQA answer metrics, equal to the official `hotpot_evaluate_v1.py`.

Normalisation: lowercase, drop ASCII punctuation (`string.punctuation`), replace the articles
a / an / the (whole words, `re` word boundaries) by a space, collapse whitespace.
EM: the normalised strings are equal. F1: token-bag overlap of the normalised strings, except that
it is 0 when either side normalises to `yes`, `no` or `noanswer` and the two sides differ.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from ._inputs import require_text

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPECIAL_ANSWERS = frozenset({"yes", "no", "noanswer"})


def normalize_answer(s: str) -> str:
    """Normalise an answer the way the official HotpotQA scorer does."""
    text = require_text(s, "answer").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def hotpot_prf(prediction: str, gold: str) -> tuple[float, float, float]:
    """Official answer (F1, precision, recall) of `prediction` against `gold`.

    All three are 0 when there is no common token, and when either side normalises to
    yes / no / noanswer while the other side differs (so `yes it is` vs `yes` scores 0).
    """
    pred_norm = normalize_answer(require_text(prediction, "prediction"))
    gold_norm = normalize_answer(require_text(gold, "gold answer"))
    if pred_norm != gold_norm and (pred_norm in _SPECIAL_ANSWERS or gold_norm in _SPECIAL_ANSWERS):
        return 0.0, 0.0, 0.0
    pred_tokens = pred_norm.split()
    gold_tokens = gold_norm.split()
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0, 0.0, 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def hotpot_f1(prediction: str, gold: str) -> float:
    """Official HotpotQA answer F1 in [0, 1] (two empty answers score 0, as officially)."""
    return hotpot_prf(prediction, gold)[0]


def hotpot_em(prediction: str, gold: str) -> float:
    """Official HotpotQA exact match: 1.0 when the normalised strings are equal, else 0.0."""
    pred_norm = normalize_answer(require_text(prediction, "prediction"))
    gold_norm = normalize_answer(require_text(gold, "gold answer"))
    return 1.0 if pred_norm == gold_norm else 0.0
