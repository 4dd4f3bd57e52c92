"""Input checks of the scorers, the LoCoMo reward, answer states and evidence citation rate."""

from __future__ import annotations

import pytest

from grse_graph.errors import ScoringError
from grse_graph.metrics import (
    answer_state,
    cites_dialogue,
    evidence_citation_rate,
    hotpot_em,
    hotpot_f1,
    hotpot_prf,
    locomo_bleu,
    locomo_f1,
    locomo_scores,
    normalize_answer,
    normalize_locomo,
)


def test_normalisers_follow_the_official_order() -> None:
    assert normalize_answer("  The Cat, and A Dog!  ") == "cat and dog"
    # commas are removed before anything else, then 'and' is dropped as well as the articles
    assert normalize_locomo("  The Cat, and A Dog!  ") == "cat dog"
    assert normalize_locomo("1,000 apples") == "1000 apples"


@pytest.mark.parametrize(
    "call",
    [
        lambda: hotpot_f1(None, "x"),
        lambda: hotpot_f1("x", 3),
        lambda: hotpot_em(["x"], "x"),
        lambda: hotpot_prf("x", b"x"),
        lambda: normalize_answer(1),
        lambda: locomo_f1(None, "x", 2),
        lambda: locomo_bleu("x", 2022, 2),
        lambda: normalize_locomo(None),
    ],
)
def test_non_string_inputs_raise_one_line_scoring_error(call) -> None:
    with pytest.raises(ScoringError) as raised:
        call()
    assert "must be a string" in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("category", [0, 5, 6, -1, True, 2.0, "2", None])
@pytest.mark.parametrize("scorer", [locomo_f1, locomo_bleu, locomo_scores])
def test_categories_outside_one_to_four_raise(scorer, category) -> None:
    with pytest.raises(ScoringError) as raised:
        scorer("Paris", "Paris", category)
    assert "\n" not in str(raised.value)


def test_category_five_is_named_as_excluded() -> None:
    with pytest.raises(ScoringError, match=r"category 5 .*excluded"):
        locomo_f1("no information available", "Not mentioned", 5)


@pytest.mark.parametrize(
    ("prediction", "gold", "category"),
    [
        ("red", "red blue", 2),
        ("7 May 2023", "May 7, 2023", 1),
        ("because she likes it", "Likely yes; because she likes it", 3),
        ("She painted a sunset", "a sunset painting", 4),
    ],
)
def test_locomo_reward_is_the_mean_of_f1_and_bleu(prediction, gold, category) -> None:
    f1 = locomo_f1(prediction, gold, category)
    bleu = locomo_bleu(prediction, gold, category)
    assert f1 != bleu  # the cases are chosen so that a reward of F1 or BLEU alone would differ
    assert locomo_scores(prediction, gold, category).reward == pytest.approx((f1 + bleu) / 2)


@pytest.mark.parametrize(
    ("prediction", "f1", "state"),
    [
        ("", 0.0, "declined"),
        ("   ", 1.0, "declined"),
        ("This is not mentioned in the conversation.", 0.0, "declined"),
        ("NOT SPECIFIED", 0.0, "declined"),
        ("The date is not available", 0.0, "declined"),
        ("Not found in the evidence", 0.0, "declined"),
        ("It is not stated", 0.0, "declined"),
        ("No information about that", 0.0, "declined"),
        ("Unknown", 1.0, "declined"),
        ("The year cannot be determined", 0.6, "declined"),
        ("Paris", 0.5, "correct"),
        ("Paris", 1.0, "correct"),
        ("Paris", 1, "correct"),
        ("Lyon", 0.49, "wrong"),
        ("Lyon", 0.0, "wrong"),
        ("not sure, maybe Lyon", 0.0, "wrong"),
    ],
)
def test_answer_state(prediction, f1, state) -> None:
    assert answer_state(prediction, f1) == state


@pytest.mark.parametrize("f1", [-0.1, 1.5, float("nan"), "0.5", None, True])
def test_answer_state_rejects_bad_scores(f1) -> None:
    with pytest.raises(ScoringError):
        answer_state("Paris", f1)


def test_answer_state_rejects_non_string_prediction() -> None:
    with pytest.raises(ScoringError):
        answer_state(None, 0.5)


@pytest.mark.parametrize(
    ("text", "cites"),
    [
        ("Caroline went on [D3:12].", True),
        ("[D10:2] and [D1:1]", True),
        ("[D3:12,D4:1]", False),
        ("[d3:12]", False),
        ("[D3: 12]", False),
        ("D3:12", False),
        ("[D:12]", False),
        ("", False),
    ],
)
def test_cites_dialogue(text, cites) -> None:
    assert cites_dialogue(text) is cites


def test_evidence_citation_rate_counts_each_response_once() -> None:
    texts = ["[D1:2] [D1:3] yes", "no citation", "see [D2:5]", "D2:5 without brackets"]
    assert evidence_citation_rate(texts) == 0.5
    assert evidence_citation_rate(("[D1:1]",)) == 1.0
    assert evidence_citation_rate(["none"]) == 0.0


@pytest.mark.parametrize("texts", [[], (), "[D1:1]", ["[D1:1]", None]])
def test_evidence_citation_rate_rejects_bad_input(texts) -> None:
    with pytest.raises(ScoringError):
        evidence_citation_rate(texts)
