"""Official scorers: HotpotQA F1/EM, LoCoMo per-category F1 and smoothed BLEU, answer analyses."""

from .analysis import (
    DECLINE_PHRASES,
    AnswerState,
    answer_state,
    carries_citation,
    cites_dialogue,
    evidence_citation_rate,
)
from .hotpotqa import hotpot_em, hotpot_f1, hotpot_prf, normalize_answer
from .locomo import (
    CATEGORY_NAMES,
    SCORED_CATEGORIES,
    LocomoScores,
    locomo_bleu,
    locomo_category_number,
    locomo_f1,
    locomo_scores,
    normalize_locomo,
)

__all__ = [
    "CATEGORY_NAMES",
    "DECLINE_PHRASES",
    "SCORED_CATEGORIES",
    "AnswerState",
    "LocomoScores",
    "answer_state",
    "carries_citation",
    "cites_dialogue",
    "evidence_citation_rate",
    "hotpot_em",
    "hotpot_f1",
    "hotpot_prf",
    "locomo_bleu",
    "locomo_category_number",
    "locomo_f1",
    "locomo_scores",
    "normalize_answer",
    "normalize_locomo",
]
