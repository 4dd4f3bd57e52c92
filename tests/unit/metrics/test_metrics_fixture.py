"""The package scorers against tests/fixtures/metrics/cases.jsonl and against a reference.

The reference below transcribes the official scorers line by line (`hotpot_evaluate_v1.py`,
LoCoMo `task_eval/evaluation.py`) and writes smoothed sentence BLEU out from its definition
(clipped n-gram precision, NLTK `method1` epsilon 0.1 for zero counts, brevity penalty) instead of
calling NLTK's BLEU. It is deliberately literal and shaped differently from the package code; the
fixture builder (tests/fixtures/metrics/build_cases.py) uses it to fill the expected values that
were not derived by hand.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem import PorterStemmer

from grse_graph.metrics import (
    hotpot_em,
    hotpot_f1,
    hotpot_prf,
    locomo_bleu,
    locomo_f1,
    locomo_scores,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "metrics" / "cases.jsonl"
TOLERANCE = 1e-9


# ---- reference: HotpotQA, transcribed from hotpot_evaluate_v1.py ----------------------------


def ref_hotpot_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def ref_hotpot_f1_score(prediction, ground_truth):
    normalized_prediction = ref_hotpot_normalize_answer(prediction)
    normalized_ground_truth = ref_hotpot_normalize_answer(ground_truth)

    ZERO_METRIC = (0, 0, 0)

    if (
        normalized_prediction in ["yes", "no", "noanswer"]
        and normalized_prediction != normalized_ground_truth
    ):
        return ZERO_METRIC
    if (
        normalized_ground_truth in ["yes", "no", "noanswer"]
        and normalized_prediction != normalized_ground_truth
    ):
        return ZERO_METRIC

    prediction_tokens = normalized_prediction.split()
    ground_truth_tokens = normalized_ground_truth.split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return ZERO_METRIC
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1, precision, recall


def ref_hotpot_exact_match_score(prediction, ground_truth):
    return ref_hotpot_normalize_answer(prediction) == ref_hotpot_normalize_answer(ground_truth)


# ---- reference: LoCoMo, transcribed from task_eval/evaluation.py --------------------------------


def ref_locomo_normalize_answer(s):
    s = s.replace(",", "")

    def remove_articles(text):
        return regex.sub(r"\b(a|an|the|and)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def ref_locomo_f1_score(prediction, ground_truth):
    ps = PorterStemmer()
    prediction_tokens = [ps.stem(w) for w in ref_locomo_normalize_answer(prediction).split()]
    ground_truth_tokens = [ps.stem(w) for w in ref_locomo_normalize_answer(ground_truth).split()]
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def ref_locomo_f1_multi(prediction, ground_truth):
    predictions = [p.strip() for p in prediction.split(",")]
    ground_truths = [g.strip() for g in ground_truth.split(",")]
    values = [
        max([ref_locomo_f1_score(prediction, gt) for prediction in predictions])
        for gt in ground_truths
    ]
    return sum(values) / len(values)  # np.mean in the official code


def ref_locomo_category_f1(output, answer, category):
    # eval_question_answering: the category-3 cut happens before the category dispatch
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category in [2, 3, 4]:
        return ref_locomo_f1_score(output, answer)
    if category in [1]:
        return ref_locomo_f1_multi(output, answer)
    raise ValueError(category)


# ---- reference: smoothed sentence BLEU written out from its definition ------------------------


def ref_bleu_on_tokens(hyp, ref):
    if len(hyp) == 0 or len(ref) == 0:
        return 0.0
    N = min(4, len(ref), len(hyp))
    matches = []
    totals = []
    for n in range(1, N + 1):
        hyp_grams = {}
        for i in range(len(hyp) - n + 1):
            gram = tuple(hyp[i : i + n])
            hyp_grams[gram] = hyp_grams.get(gram, 0) + 1
        ref_grams = {}
        for i in range(len(ref) - n + 1):
            gram = tuple(ref[i : i + n])
            ref_grams[gram] = ref_grams.get(gram, 0) + 1
        clipped = 0
        for gram, count in hyp_grams.items():
            clipped += min(count, ref_grams.get(gram, 0))
        matches.append(clipped)
        totals.append(max(1, len(hyp) - n + 1))
    if matches[0] == 0:  # NLTK returns 0 outright when no unigram matches
        return 0.0
    log_sum = 0.0
    for n in range(N):
        # method1: epsilon counts (0.1) for a zero numerator
        p = 0.1 / totals[n] if matches[n] == 0 else matches[n] / totals[n]
        log_sum += (1.0 / N) * math.log(p)
    c = len(hyp)
    r = len(ref)
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return bp * math.exp(log_sum)


def ref_locomo_tokens(text):
    ps = PorterStemmer()
    return [ps.stem(w) for w in ref_locomo_normalize_answer(text).split()]


def ref_locomo_bleu(output, answer, category):
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category == 1:
        preds = [p.strip() for p in output.split(",") if p.strip() != ""]
        golds = [g.strip() for g in answer.split(",") if g.strip() != ""]
        if len(preds) == 0 or len(golds) == 0:
            return 0.0
        total = 0.0
        for g in golds:
            best = 0.0
            for p in preds:
                best = max(best, ref_bleu_on_tokens(ref_locomo_tokens(p), ref_locomo_tokens(g)))
            total += best
        return total / len(golds)
    return ref_bleu_on_tokens(ref_locomo_tokens(output), ref_locomo_tokens(answer))


def reference_values(case: dict[str, Any]) -> dict[str, float]:
    """Expected values of one fixture case according to the reference implementation."""
    prediction, answer = case["prediction"], case["answer"]
    if case["metric"] == "hotpotqa":
        f1, precision, recall = ref_hotpot_f1_score(prediction, answer)
        em = 1.0 if ref_hotpot_exact_match_score(prediction, answer) else 0.0
        return {"f1": float(f1), "em": em, "precision": float(precision), "recall": float(recall)}
    category = case["category"]
    return {
        "f1": float(ref_locomo_category_f1(prediction, answer, category)),
        "bleu": float(ref_locomo_bleu(prediction, answer, category)),
    }


# ---- the tests ---------------------------------------------------------------------------------


def load_cases() -> list[dict[str, Any]]:
    # Absent only while build_cases.py imports this module to regenerate the fixture; the size
    # test below then fails, so an absent fixture never passes silently.
    if not FIXTURE.exists():
        return []
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line]


CASES = load_cases()


def package_values(case: dict[str, Any]) -> dict[str, float]:
    prediction, answer = case["prediction"], case["answer"]
    if case["metric"] == "hotpotqa":
        f1, precision, recall = hotpot_prf(prediction, answer)
        return {
            "f1": hotpot_f1(prediction, answer),
            "em": hotpot_em(prediction, answer),
            "precision": precision,
            "recall": recall,
            "prf_f1": f1,
        }
    category = case["category"]
    return {
        "f1": locomo_f1(prediction, answer, category),
        "bleu": locomo_bleu(prediction, answer, category),
    }


def test_fixture_is_large_and_covers_every_scorer() -> None:
    assert len(CASES) >= 200
    assert len({case["id"] for case in CASES}) == len(CASES)
    kinds = Counter((case["metric"], case["category"]) for case in CASES)
    assert kinds[("hotpotqa", None)] >= 50
    for category in (1, 2, 3, 4):
        assert kinds[("locomo", category)] >= 25
    hand = [case for case in CASES if case["hand"]]
    assert len(hand) >= 80


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_package_matches_expected(case: dict[str, Any]) -> None:
    got = package_values(case)
    for key, expected in case["expected"].items():
        assert got[key] == pytest.approx(expected, abs=TOLERANCE), key
    if case["metric"] == "hotpotqa":
        assert got["prf_f1"] == got["f1"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_reference_matches_expected(case: dict[str, Any]) -> None:
    """Confirms the hand-derived values against the literal transcription of the official code."""
    got = reference_values(case)
    assert set(case["expected"]) == set(got)
    for key, expected in case["expected"].items():
        assert got[key] == pytest.approx(expected, abs=TOLERANCE), key


def test_reference_bleu_agrees_with_nltk() -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    checked = 0
    for case in CASES:
        if case["metric"] != "locomo":
            continue
        hyp = ref_locomo_tokens(case["prediction"])
        ref = ref_locomo_tokens(case["answer"])
        if not hyp or not ref:
            continue
        n = min(4, len(hyp), len(ref))
        nltk_value = sentence_bleu(
            [ref], hyp, weights=(1 / n,) * n, smoothing_function=SmoothingFunction().method1
        )
        assert ref_bleu_on_tokens(hyp, ref) == pytest.approx(nltk_value, abs=TOLERANCE)
        checked += 1
    assert checked >= 80


ANSWER_ALPHABET = st.sampled_from(
    [
        "a",
        "an",
        "the",
        "and",
        "yes",
        "no",
        "noanswer",
        "Paris",
        "runs",
        "running",
        "cats",
        "1,000",
        "2023",
        "May",
        ",",
        ";",
        ".",
        "-",
        "'",
        " ",
        "  ",
        "\t",
        "É",
        "é",
        "ß",
        "x",
        "q",
    ]
)
ANSWERS = st.lists(ANSWER_ALPHABET, max_size=8).map(" ".join) | st.text(max_size=20)


@settings(max_examples=150, deadline=None)
@given(prediction=ANSWERS, gold=ANSWERS)
def test_hotpot_matches_reference_on_generated_answers(prediction: str, gold: str) -> None:
    f1, precision, recall = ref_hotpot_f1_score(prediction, gold)
    assert hotpot_prf(prediction, gold) == pytest.approx((f1, precision, recall), abs=TOLERANCE)
    assert hotpot_em(prediction, gold) == float(ref_hotpot_exact_match_score(prediction, gold))


@settings(max_examples=150, deadline=None)
@given(prediction=ANSWERS, gold=ANSWERS, category=st.sampled_from([1, 2, 3, 4]))
def test_locomo_matches_reference_on_generated_answers(
    prediction: str, gold: str, category: int
) -> None:
    f1 = ref_locomo_category_f1(prediction, gold, category)
    bleu = ref_locomo_bleu(prediction, gold, category)
    assert locomo_f1(prediction, gold, category) == pytest.approx(f1, abs=TOLERANCE)
    assert locomo_bleu(prediction, gold, category) == pytest.approx(bleu, abs=TOLERANCE)
    assert locomo_scores(prediction, gold, category).reward == pytest.approx(
        (f1 + bleu) / 2, abs=TOLERANCE
    )
