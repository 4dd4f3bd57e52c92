"""One real SkillMAS round on the embedded engine (small model, tiny sizes).

Four training questions of two categories with one-sentence contexts keep every prompt short.
It checks what SkillMAS writes to the run folder: one rollout and one credit record (verified
trace + per-step used-skill signals) per subset question, the round's state (tables, failure
counts, pool, team, round record with the restructuring decision) after the start state, the
round's GateRecord (train success, no gate decisions), the libraries of every agent, and the
report section. The diagnoses are checked only as plumbing (see the round test's docstring).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.methods.skillmas import SkillmasRecord, SkillmasState
from grse_graph.methods.skillmas.diagnosis import (
    MAX_CLUSTERS,
    Diagnosis,
    checked,
    cluster_failures,
    unanalysed,
)
from grse_graph.methods.skillmas.retention import retain
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.tasks.registry import load_task
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training

NO_FUNCTION_CALLED = (
    "StructuredOutputError: ClusterAnalysis: no valid output after 2 attempt(s): "
    "the reply did not call the function ClusterAnalysis"
)
"""How the small model's analyst replies failed in every run (see the round test)."""

ROWS = [
    ("train", "colour", "What colour is the barn?", "red", "The barn on the hill is painted red."),
    ("train", "colour", "What colour is the door?", "green", "The front door is green."),
    ("train", "place", "Which city hosts the fair?", "Oslo", "Every spring the fair is in Oslo."),
    ("train", "place", "Where does Ana live?", "Lima", "Ana has lived in Lima for years."),
    ("validation", "place", "What does Mia play?", "violin", "Mia plays the violin."),
    ("test", "colour", "What is the dog's name?", "Rex", "The dog is called Rex."),
]


def _write_task(path: Path) -> Path:
    lines = [
        json.dumps(
            {"id": f"q{i}", "split": s, "category": c, "question": q, "answer": a, "context": x}
        )
        for i, (s, c, q, a, x) in enumerate(ROWS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.engine
def test_one_skillmas_round_plumbing_on_the_small_model(
    small_engine_url: str, tmp_path: Path
) -> None:
    """Plumbing only for the diagnoses: the round diagnoses its top non-P2 failure clusters
    and records each one exactly as the checks leave it, a checked analysis or the counted
    "did not call the function" outcome (tag none), and the report counts them.

    It cannot require an analysis: in three runs at 306b645 the small model's four analyst
    replies (two attempts for each of the two clusters, 920 completion tokens, under the
    300-token cap) called no function. The single-call analyst with scripted replies, which
    must end in checked analyses, is tested in
    tests/unit/methods/skillmas/test_skillmas_diagnosis.py."""
    data = _write_task(tmp_path / "tiny.jsonl")
    llm = load_config(
        env={},
        overrides={
            **{f"{role}.base_url": small_engine_url for role in ("actor", "critic", "optimizer")},
            "actor.max_tokens": 64,
            "critic.max_tokens": 300,
            "optimizer.max_tokens": 300,
        },
    )
    config = TrainConfig.model_validate(
        {
            "task": "jsonl",
            "data": str(data),
            "method": {
                "name": "skillmas",
                "restructure": "code",
                "measure_final": False,
                "judge_max_tokens": 100,
                "analyst_max_tokens": 300,
            },
            "iterations": 1,
            "batch_size": 4,
            "concurrency": 2,
        }
    )
    ledger = UsageLedger()
    run = RunFolder(tmp_path / "run")
    with ModelRoles(llm, ledger) as roles:
        deps = TrainingDeps(
            task=load_task("jsonl", data=data),
            provider=roles,
            config=config,
            run=run,
            usage=lambda: ledger.report().model_dump(mode="json"),
        )
        result = asyncio.run(run_training(deps))

    assert result.iterations_done == 1
    rollouts = run.rollouts.read()
    assert len(rollouts) == 4 and all(r.rollout.steps for r in rollouts)
    records = run.credits(SkillmasRecord).read()
    assert sorted(r.rollout_ids[0] for r in records) == sorted(r.unit_id for r in rollouts)
    traces = [r.trace for r in records if r.trace is not None]
    assert len(traces) == 4
    assert {t.task_type for t in traces} == {"colour", "place"}
    assert all(
        len(r.signals) == len(run.rollouts.get(r.rollout_ids[0]).rollout.steps) for r in records
    )
    states = [SkillmasState.model_validate(s.state) for s in run.method_states.read()]
    assert [s.iteration for s in states] == [0, 1]
    final = states[-1]
    assert final.round is not None and final.round.episodes == 4
    assert final.round.restructuring is not None
    assert final.executors.agents["retriever"].overall.n == 4
    assert sum(final.failure_counts.values()) == sum(not t.success for t in traces)
    diagnoses = final.round.diagnoses
    _assert_diagnoses_recorded(diagnoses, traces, states[0].failure_counts)
    (gate,) = run.gate.read()
    assert gate.decisions == [] and gate.base_score == final.round.success_rate
    assert sorted(gate.library_paths) == sorted(m.name for m in final.members)
    for agent in gate.library_paths:
        assert run.library_dir(1, agent).is_dir()
    report = run.report_path.read_text()
    assert report.startswith("# SkillMAS training report: jsonl")
    assert "### Restructuring" in report
    # The round table counts the diagnosed clusters and the locally diagnosable ones.
    (row,) = [line for line in report.splitlines() if line.startswith("| 1 | 4 |")]
    diagnosed, local = (int(cell) for cell in row.split("|")[7:9])
    assert (diagnosed, local) == (len(diagnoses), sum(d.locally_diagnosable for d in diagnoses))
    usage = run.read_usage()
    assert usage["roles"]["actor"]["calls"] >= 8
    # The engine answered every analyst request: an unanalysed cluster is the model's reply.
    assert usage["roles"]["critic"]["failures"] == 0


def _assert_diagnoses_recorded(
    diagnoses: Sequence[Diagnosis],
    traces: Sequence[VerifiedTrace],
    failure_counts: Mapping[str, int],
) -> None:
    """The round diagnosed its top non-P2 failure clusters, each one exactly as the checks
    record it: a parsed analysis with the post-checks' verdict, or, without one, the
    structured call's failure after its repair round (tag none, not unique)."""
    ranked = cluster_failures(retain(traces, failure_counts).items, traces)
    clusters = {c.key: c for c in [c for c in ranked if c.tier != "P2"][:MAX_CLUSTERS]}
    print("outcomes:", [(d.cluster, d.tag, d.checks_failed, d.error) for d in diagnoses])
    assert sorted(d.cluster for d in diagnoses) == sorted(clusters)
    for diagnosis in diagnoses:
        cluster = clusters[diagnosis.cluster]
        if diagnosis.analysis is not None:
            assert diagnosis == checked(cluster, diagnosis.analysis)
        else:
            assert diagnosis == unanalysed(cluster, NO_FUNCTION_CALLED)
            assert diagnosis.tag == "none" and not diagnosis.unique


@pytest.mark.engine
def test_analyst_loop_plumbing_on_the_small_model(small_engine_url: str) -> None:
    """Plumbing only: the six-turn tool loop against the real engine. The seven tools bind,
    the engine answers every turn (the replayed transcript included), and the loop ends within
    its budget with a checked analysis or the counted "no valid submission" outcome.

    It cannot require an analysis: in three runs at 25a995a the small model called no tool on
    any turn (six reminders, no submission). The loop's twin over HTTP with a scripted analyst,
    which must end in a checked analysis, is in
    tests/unit/methods/skillmas/test_skillmas_analyst_loop.py."""
    from grse_graph.methods.skillmas.analyst_loop import ToolLoopAnalyst
    from grse_graph.methods.skillmas.diagnosis import AnalystEvidence, diagnose
    from grse_graph.team.rollout import Rollout, Step

    llm = load_config(
        env={}, overrides={"critic.base_url": small_engine_url, "critic.max_tokens": 300}
    )
    failures = [
        VerifiedTrace(
            rollout_id=f"f{i}",
            question_id=f"q{i}",
            task_type="colour",
            task=f"What colour is the {thing}?",
            success=False,
            score=0.0,
            executors=["retriever", "reasoner"],
            error_message="wrong",
            summary=f"Q: What colour is the {thing}? | gold: red | pred: blue | F1 0.00",
            action_trace=["retriever > respond(The barn is red.)", "reasoner > respond(blue)"],
        )
        for i, thing in enumerate(("barn", "roof"))
    ]
    rollouts = {
        t.rollout_id: Rollout(
            rollout_id=t.rollout_id,
            question_id=t.question_id,
            answer="blue",
            steps=[
                Step(index=0, agent="retriever", system_prompt="", input="", output="It is red."),
                Step(index=1, agent="reasoner", system_prompt="", input="", output="Answer: blue"),
            ],
        )
        for t in failures
    }
    ledger = UsageLedger()
    with ModelRoles(llm, ledger) as roles:
        loop = ToolLoopAnalyst(
            AnalystEvidence(rollouts, {"q0": "red", "q1": "red"}, {}, roles),
            agent_boundaries={"retriever": "role: find", "reasoner": "role: answer"},
            max_tokens=300,
        )
        clusters = cluster_failures(retain(failures, {}).items, failures)
        found = asyncio.run(diagnose(clusters, loop))
    assert found, "the two-failure cluster is analysed (not P2)"
    print("outcomes:", [(d.turns, d.tools_called, d.error) for d in found])
    for diagnosis in found:
        assert diagnosis.turns is not None and 1 <= diagnosis.turns <= 6
        assert (diagnosis.analysis is None) == (diagnosis.error is not None)
        if diagnosis.analysis is None:
            # Not a refusal: the budget ran out on turns the engine answered.
            assert diagnosis.tag == "none" and diagnosis.turns == 6, diagnosis.error
            assert str(diagnosis.error).startswith("no valid submission within 6 turns")
    # One answered request a turn, none failed.
    critic = ledger.report().roles["critic"]
    assert critic.calls == sum(d.turns or 0 for d in found) and critic.failures == 0
