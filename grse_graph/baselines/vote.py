"""Pure decision rules of the baselines: majority vote and the Self-Refine stop test."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_CORRECT = re.compile(r"\bCORRECT\b")


def normalize_vote(answer: str) -> str:
    """Lowercase, no punctuation, no articles, single spaces (HotpotQA's normalisation)."""
    text = answer.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def majority_vote(answers: Sequence[str]) -> tuple[str, int]:
    """The most frequent answer after normalisation, and its vote count.

    Empty answers do not vote unless all are empty. Ties go to the answer whose normalised form
    appeared first; the returned text is the first original answer with the winning form.
    """
    forms = [normalize_vote(a) for a in answers]
    counts = Counter(f for f in forms if f)
    if not counts:
        return ("", 0) if not answers else (answers[0].strip(), len(answers))
    best = max(counts.values())
    winner = next(f for f in forms if f and counts[f] == best)
    return answers[forms.index(winner)].strip(), best


def feedback_says_correct(feedback: str) -> bool:
    """True when the feedback says CORRECT (upper case, as instructed) without a negation such
    as NOT CORRECT or INCORRECT."""
    if not _CORRECT.search(feedback):
        return False
    return not re.search(r"\bNOT\s+CORRECT\b|\bINCORRECT\b", feedback, re.I)
