"""Routes a prediction to the right official scorer and packs reward and metrics."""

from __future__ import annotations

from grse_graph.errors import TaskError
from grse_graph.metrics.hotpotqa import hotpot_em, hotpot_f1
from grse_graph.metrics.locomo import locomo_scores
from grse_graph.tasks.base import ScoredAnswer, TaskQuestion

METRIC_NAMES: tuple[str, ...] = ("hotpotqa", "locomo", "exact")


def score_hotpotqa(prediction: str, gold: str) -> ScoredAnswer:
    """Reward = official HotpotQA token F1; metrics f1 and em."""
    f1 = hotpot_f1(prediction, gold)
    return ScoredAnswer(reward=f1, metrics={"f1": f1, "em": hotpot_em(prediction, gold)})


def score_locomo(prediction: str, gold: str, category: int) -> ScoredAnswer:
    """Reward = (category F1 + smoothed BLEU) / 2 of the prediction as it is, as the official
    scorer scores it (`locomo_scores`, the path `grse score` takes too: a dialogue-id citation
    on the answer line is not stripped); metrics f1 and bleu."""
    scores = locomo_scores(prediction, gold, category)
    return ScoredAnswer(reward=scores.reward, metrics={"f1": scores.f1, "bleu": scores.bleu})


def score_exact(prediction: str, gold: str) -> ScoredAnswer:
    """Reward = HotpotQA-normalised exact match; metric em."""
    em = hotpot_em(prediction, gold)
    return ScoredAnswer(reward=em, metrics={"em": em})


def locomo_category_of(question: TaskQuestion) -> int:
    """The LoCoMo category number a question is scored under."""
    category = question.context.get("locomo_category")
    if not isinstance(category, int) or isinstance(category, bool) or not 1 <= category <= 4:
        raise TaskError(
            f"question {question.id}: LoCoMo scoring needs context.locomo_category 1-4, "
            f"got {category!r}"
        )
    return category


def score_with(metric: str, question: TaskQuestion, prediction: str) -> ScoredAnswer:
    """Score `prediction` for `question` with the named metric."""
    if metric == "hotpotqa":
        return score_hotpotqa(prediction, question.answer)
    if metric == "locomo":
        return score_locomo(prediction, question.answer, locomo_category_of(question))
    if metric == "exact":
        return score_exact(prediction, question.answer)
    raise TaskError(f"unknown metric '{metric}' (known: {', '.join(METRIC_NAMES)})")
