"""Validation gate decisions and assembly."""

from __future__ import annotations

import pytest

from grse_graph.methods.gate import assemble, decide
from tests.unit.methods.grse_methods_builders import library, skill


def test_accept_within_tolerance_reject_below() -> None:
    decisions = decide(0.52, {"reader": 0.50, "answerer": 0.49, "extra": 0.60})
    by = {d.agent: d for d in decisions}
    assert by["reader"].accepted  # exactly b - delta
    assert not by["answerer"].accepted
    assert by["extra"].accepted
    assert by["answerer"].base_score == 0.52 and by["answerer"].candidate_score == 0.49
    assert all(d.delta == 0.02 for d in decisions)


def test_custom_delta() -> None:
    assert not decide(0.5, {"a": 0.49}, delta=0.0)[0].accepted
    assert decide(0.5, {"a": 0.41}, delta=0.1)[0].accepted


def test_assemble_swaps_only_accepted_after_all_tested() -> None:
    current = {"reader": library("reader"), "answerer": library("answerer")}
    candidates = {
        "reader": library("reader", skill("extract")),
        "answerer": library("answerer", skill("format")),
    }
    decisions = decide(0.5, {"reader": 0.6, "answerer": 0.1})
    out = assemble(current, candidates, decisions)
    assert out["reader"].names() == ["extract"]
    assert out["answerer"].names() == []
    assert current["reader"].names() == []  # inputs untouched


def test_assemble_rejects_decision_without_candidate() -> None:
    with pytest.raises(ValueError):
        assemble({"reader": library("reader")}, {}, decide(0.5, {"reader": 0.6}))


def test_paired_difference_and_its_standard_error() -> None:
    from grse_graph.methods.gate import PairedDifference

    paired = PairedDifference.of([0.0, 0.5, 1.0, 0.5], [0.5, 0.5, 1.0, 1.0])
    assert paired.difference == 0.25 and paired.questions == 4
    # differences 0.5, 0, 0, 0.5: sample sd 0.2887, / sqrt(4)
    assert abs(paired.standard_error - 0.144338) < 1e-6
    assert PairedDifference.of([0.2], [0.7]).standard_error == 0.0
    decisions = decide(0.5, {"reader": 0.75}, 0.02, {"reader": paired})
    assert (decisions[0].difference, decisions[0].standard_error) == (
        0.25,
        paired.standard_error,
    )
    assert decide(0.5, {"reader": 0.75})[0].difference is None
