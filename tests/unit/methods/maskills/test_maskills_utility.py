"""MASkills' utility: u <- 0.6 u + 0.4 * batch mean of this iteration's credit deltas."""

from __future__ import annotations

import asyncio

import pytest

from grse_graph.methods.maskills.aggregate import aggregate
from grse_graph.methods.maskills.method import MaskillsMethod
from grse_graph.methods.maskills.settings import MaskillsSettings
from grse_graph.methods.utility import bookkeeping
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.maskills.maskills_builders import credit, library, record, skill, trajectory

LIBS = {
    "reader": library(
        "reader",
        skill("extract", **{"grse-utility": "0.5", "grse-invocations": "4"}),
        skill("skim", **{"grse-utility": "-0.25"}),
        skill("fresh"),
    ),
}


def updated() -> dict:
    # extract: two credits (1.0, -0.2) -> mean 0.4, merged by the optimizer (whose own utility
    # score must NOT drive the average); fresh: one credit 0.5; skim: no credit this iteration.
    records = [
        record(
            trajectory(LIBS, qid="q1", outputs=("plain",)),
            [credit("reader", "extract", delta=1.0), credit("reader", "fresh", delta=0.5)],
        ),
        record(
            trajectory(LIBS, qid="q2", outputs=("plain",)),
            [credit("reader", "extract", verdict="harmful", delta=-0.2)],
        ),
    ]
    merged = tool_call_message(
        "MergedGradient",
        {
            "summary": "mixed",
            "verdict": "keep",
            "suggested_edit": "",
            "redundant_with": [],
            "utility_score": -0.9,
        },
    )
    provider = FakeProvider({"optimizer": ScriptedChatModel([merged])})
    method = MaskillsMethod(MaskillsSettings())
    plan = asyncio.run(aggregate(records, LIBS, provider, method.settings))
    return bookkeeping(LIBS, plan, method.utility_rule())


def test_credited_skill_moves_by_the_moving_average_of_the_batch_mean() -> None:
    extract = updated()["reader"].get("extract")
    assert extract.utility == pytest.approx(0.6 * 0.5 + 0.4 * 0.4)  # 0.46


def test_a_skill_without_credit_this_iteration_keeps_its_utility() -> None:
    assert updated()["reader"].get("skim").utility == -0.25


def test_a_new_skill_starts_at_zero() -> None:
    assert updated()["reader"].get("fresh").utility == pytest.approx(0.4 * 0.5)  # 0.2


def test_invocations_add_the_trace_entries_and_hashes_do_not_change() -> None:
    after = updated()["reader"]
    assert after.get("extract").invocations == 6  # 4 + one entry in each of two trajectories
    assert after.get("skim").invocations == 2
    assert after.content_hash() == LIBS["reader"].content_hash()


def test_utility_is_rounded_to_four_places() -> None:
    rule = MaskillsMethod(MaskillsSettings()).utility_rule()
    lib = {"reader": library("reader", skill("extract", **{"grse-utility": "0.33333"}))}
    rec = record(trajectory(lib, outputs=("plain",)), [credit(delta=0.11111)])
    plan = asyncio.run(aggregate([rec], lib, FakeProvider({}), MaskillsSettings()))
    value = rule(lib, plan)["reader"].get("extract").utility
    assert value == round(0.6 * 0.33333 + 0.4 * 0.11111, 4)
