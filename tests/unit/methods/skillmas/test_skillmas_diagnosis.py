"""Bounded diagnosability: clusters and their scores, one structured call per non-P2 cluster,
and the deterministic post-checks on cause, uniqueness and tag."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from grse_graph.methods.skillmas.diagnosis import (
    AnalystEvidence,
    ClusterAnalysis,
    SingleCallAnalyst,
    checked,
    cluster_failures,
    diagnose,
)
from grse_graph.methods.skillmas.retention import retain
from grse_graph.methods.skillmas.trace import VerifiedTrace
from tests.unit.methods.skillmas.skillmas_fakes import HANDOFF_ANALYSIS, Calls, FakeProvider


def trace(rid: str, success: bool, tau: str = "multi-hop") -> VerifiedTrace:
    return VerifiedTrace(
        rollout_id=rid,
        question_id=rid,
        task_type=tau,
        task="q",
        success=success,
        score=1.0 if success else 0.2,
        executors=["retriever", "reasoner"],
        error_message="" if success else "wrong",
        summary="Q: q | gold: blue | pred: red | F1 0.20",
        action_trace=["retriever > respond(x)", "reasoner > respond(y)"],
    )


def clusters_of(traces: list[VerifiedTrace]):
    return cluster_failures(retain(traces, {}).items, traces)


def test_cluster_score_and_tier() -> None:
    traces = [trace("f1", False), trace("f2", False), trace("s1", True)]
    (cluster,) = clusters_of(traces)
    # coverage 1 - 1/3, contrast 1, overlap 0.5 (two agents), richness (0.1+1+0.5)/3, leverage 1
    expected = 0.30 * (2 / 3) + 0.25 * 1.0 + 0.20 * 0.5 + 0.15 * (1.6 / 3) + 0.10 * 1.0
    assert cluster.priority == pytest.approx(expected, abs=1e-4)
    assert cluster.tier == "P0"
    assert cluster.selection_reason == "routing_boundary"
    assert [t.rollout_id for t in cluster.failures] == ["f2", "f1"]  # retained order


def analysis(**changes: Any) -> ClusterAnalysis:
    base = {
        **HANDOFF_ANALYSIS,
        "dominant_cause": "missing precondition",
        "tag": "add-guard",
        "recommended_action": "create_skill",
    }
    return ClusterAnalysis.model_validate({**base, **changes})


def test_post_checks_set_uniqueness_and_force_tags() -> None:
    (cluster,) = clusters_of([trace("f1", False), trace("f2", False), trace("s", True)])
    ok = checked(cluster, analysis())
    assert ok.unique and ok.tag == "add-guard" and ok.locally_diagnosable
    not_unique = checked(cluster, analysis(unique=False))
    assert not not_unique.unique and not_unique.tag == "none"
    invalid = checked(cluster, analysis(causal_explanation="too short", evidence_refs=[9]))
    assert invalid.tag == "none" and len(invalid.checks_failed) == 2
    handoff = checked(cluster, analysis(dominant_cause="bad executor assignment", tag="none"))
    assert handoff.tag == "handoff-to-structure" and not handoff.locally_diagnosable
    other = checked(cluster, analysis(dominant_cause="other", tag="none"))
    assert not other.unique and other.tag == "none"


def test_tag_that_does_not_fit_the_cause_is_rejected() -> None:
    with pytest.raises(ValidationError, match="does not fit"):
        analysis(tag="reorder-step")


def test_one_call_per_non_p2_cluster_and_repair_then_none() -> None:
    traces = [trace("f1", False), trace("f2", False), trace("s", True)]
    answers = iter(
        [
            {**HANDOFF_ANALYSIS, "dominant_cause": "skill conflict", "tag": "add-guard"},
            {**HANDOFF_ANALYSIS, "dominant_cause": "skill conflict", "tag": "add-guard"},
        ]
    )
    calls = Calls()
    provider = FakeProvider(lambda schema, messages: next(answers), calls)
    (result,) = asyncio.run(
        diagnose(clusters_of(traces), SingleCallAnalyst(AnalystEvidence({}, {}, {}, provider)))
    )
    assert calls.count("ClusterAnalysis") == 2  # the call and its one repair
    assert result.error is not None and result.tag == "none"
    good = FakeProvider(lambda schema, messages: HANDOFF_ANALYSIS, Calls())
    (ok,) = asyncio.run(
        diagnose(
            clusters_of(traces), SingleCallAnalyst(AnalystEvidence({}, {"f1": "blue"}, {}, good))
        )
    )
    assert ok.tag == "handoff-to-structure" and ok.rollout_ids == ["f2", "f1"]
