"""Official scorers: HotpotQA F1/EM, LoCoMo per-category F1 and smoothed BLEU, answer analyses."""

from .analysis import (
    DECLINE_PHRASES,
    AnswerState,
    answer_state,
    cites_dialogue,
    evidence_citation_rate,
)
from .hotpotqa import hotpot_em, hotpot_f1, hotpot_prf, normalize_answer
from .locomo import (
    SCORED_CATEGORIES,
    locomo_bleu,
    locomo_f1,
    locomo_reward,
    normalize_locomo,
)

__all__ = [
    "DECLINE_PHRASES",
    "SCORED_CATEGORIES",
    "AnswerState",
    "answer_state",
    "cites_dialogue",
    "evidence_citation_rate",
    "hotpot_em",
    "hotpot_f1",
    "hotpot_prf",
    "locomo_bleu",
    "locomo_f1",
    "locomo_reward",
    "normalize_answer",
    "normalize_locomo",
]
