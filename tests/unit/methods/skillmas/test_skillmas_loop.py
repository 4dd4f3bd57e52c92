"""The SkillMAS round loop with fakes: restructuring adds a specialist, the next round runs a
three-agent team whose rollouts record the specialist's steps, and a run interrupted after the
restructuring resumes with exactly the team, tables and pool of an uninterrupted run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from grse_graph.llm.provider import SamplingSettings
from grse_graph.methods.registry import BUILTIN_METHODS
from grse_graph.methods.skillmas import SkillmasMethod, SkillmasRecord, SkillmasState
from grse_graph.skills import SkillLibrary
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.ids import derive_seed, validation_seed_id
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.unit.methods.skillmas.skillmas_fakes import (
    HANDOFF_ANALYSIS,
    Calls,
    FakeProvider,
    InjectedFailure,
    TwoTypeTask,
    handoff_responder,
)

METHODS = {**BUILTIN_METHODS, "skillmas": SkillmasMethod}


def deps(path: Path, calls: Calls, **method: Any) -> TrainingDeps:
    config = TrainConfig(
        task="twotype",
        method={"name": "skillmas", **method},
        iterations=2,
        batch_size=6,
        concurrency=1,
    )
    return TrainingDeps(
        task=TwoTypeTask(),
        provider=FakeProvider(handoff_responder, calls),
        config=config,
        run=RunFolder(path),
        methods=METHODS,
    )


def states(run: RunFolder) -> list[SkillmasState]:
    return [SkillmasState.model_validate(r.state) for r in run.method_states.read()]


def test_restructuring_adds_a_specialist_that_runs_in_the_next_round(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    result = asyncio.run(run_training(deps(run.path, Calls())))
    found = states(run)
    assert [s.iteration for s in found] == [0, 1, 2, 3]  # start, two rounds, measurement
    first = found[1].round
    assert first is not None and first.restructuring is not None
    decision = first.restructuring
    assert decision.action == "add" and decision.task_type == "multi-hop"
    assert decision.team_before == ["retriever", "reasoner"]
    assert decision.team_after == ["retriever", "specialist-multi-hop", "reasoner"]
    assert [d.tag for d in first.diagnoses] == ["handoff-to-structure"]
    assert [m.name for m in found[1].members] == decision.team_after
    # round 2: multi-hop questions run the three-agent team, single-hop ones the seed chain
    round2 = {r.question_id: r.rollout for r in run.rollouts.read() if r.iteration == 2}
    multi = [q.id for q in TwoTypeTask().split("train") if q.category == "multi-hop"]
    for qid, rollout in round2.items():
        agents = [s.agent for s in rollout.steps]
        if qid in multi:
            assert agents == ["retriever", "specialist-multi-hop", "reasoner"]
        else:
            assert agents == ["retriever", "reasoner"]
    traces = [r.trace for r in run.credits(SkillmasRecord).read() if r.iteration == 2]
    assert all(
        "specialist-multi-hop" in t.executors for t in traces if t and t.task_type == "multi-hop"
    )
    # Q^a: the specialist was initialised as an extension agent and learned in round 2
    q = found[2].executors.agents["specialist-multi-hop"]
    assert q.is_extension and q.targets == ["multi-hop"] and q.overall.n == 3
    assert "specialist-multi-hop" in result.final_libraries
    assert run.library_dir(1, "specialist-multi-hop").exists()
    assert len(run.gate.read()) == 2
    report = run.report_path.read_text()
    assert "## SkillMAS rounds" in report and "specialist-multi-hop" in report
    assert (
        "retriever > reasoner" in report and "retriever > specialist-multi-hop > reasoner" in report
    )


def test_code_mode_and_guarded_mode_without_evidence(tmp_path: Path) -> None:
    def quiet(schema: str, messages: list[Any]) -> dict[str, Any]:
        answer = handoff_responder(schema, messages)
        if schema == "ClusterAnalysis":
            return {**answer, "dominant_cause": "other", "unique": False, "tag": "none"}
        return answer

    for mode, expected in (("guarded", "keep"), ("code", "add")):
        run = RunFolder(tmp_path / mode)
        d = deps(run.path, Calls(), restructure=mode)
        d = TrainingDeps(
            task=d.task,
            provider=FakeProvider(quiet, Calls()),
            config=d.config.model_copy(update={"iterations": 1}),
            run=d.run,
            methods=METHODS,
        )
        asyncio.run(run_training(d))
        decision = states(run)[1].round.restructuring  # type: ignore[union-attr]
        assert decision is not None and decision.action == expected


def repair_responder(schema: str, messages: list[Any]) -> dict[str, Any]:
    """Analyst: a locally diagnosable cause (so CREATE writes a shadow skill); judge: the
    reasoner followed the new skill."""
    if schema == "ClusterAnalysis":
        return {
            **HANDOFF_ANALYSIS,
            "dominant_cause": "missing precondition",
            "tag": "add-guard",
            "recommended_action": "create_skill",
        }
    if schema == "FollowedSkills":
        return {"used": ["multi-hop-rl-r1"]}
    return handoff_responder(schema, messages)


def repair_deps(path: Path, calls: Calls) -> TrainingDeps:
    d = deps(path, calls, restructure="code")
    return TrainingDeps(
        task=d.task,
        provider=FakeProvider(repair_responder, calls),
        config=d.config,
        run=d.run,
        methods=METHODS,
    )


def test_resume_restores_team_tables_and_pool_exactly(tmp_path: Path) -> None:
    clean = RunFolder(tmp_path / "clean")
    clean_calls = Calls()
    asyncio.run(run_training(repair_deps(clean.path, clean_calls)))
    after_one = states(clean)[1]
    assert after_one.status["reasoner"] == {"multi-hop-rl-r1": "shadow"}
    assert [m.name for m in after_one.members] == ["retriever", "specialist-multi-hop", "reasoner"]
    after_two = states(clean)[2]
    record = after_two.skills.skills["reasoner/multi-hop-rl-r1"]
    assert record.overall.n == 6  # offered (shadow) and followed on every question of round 2
    assert record.tasks["single-hop"].q == 1.0 and record.tasks["multi-hop"].q == 0.0
    assert after_two.round is not None
    pool = {(d.skill, d.uses, d.successes, d.decision) for d in after_two.round.pool}
    # 6 uses at 0.5 stay in the pool; round 2's add-guard repair is a new shadow copy (0 uses)
    assert pool == {("multi-hop-rl-r1", 6, 3, "hold"), ("multi-hop-rl-r1-r2", 0, 0, "hold")}
    assert after_two.parents == {"reasoner/multi-hop-rl-r1-r2": "reasoner/multi-hop-rl-r1"}
    saved = SkillLibrary.load(clean.library_dir(2, "reasoner"), agent="reasoner")
    assert saved.get("multi-hop-rl-r1").invocations == 6  # the round's used-skill count
    # fail in round 2 (after round 1's state was written), then resume
    crashed = RunFolder(tmp_path / "crashed")
    round_one_calls = 6 * 2 + 1 + 1  # 6 rollouts x 2 agents, 1 analyst and 1 CREATE call
    calls = Calls(fail_on=round_one_calls + 4)
    with pytest.raises(InjectedFailure):
        asyncio.run(run_training(repair_deps(crashed.path, calls)))
    assert [s.iteration for s in states(crashed)] == [0, 1]
    calls.fail_on = None
    asyncio.run(run_training(repair_deps(crashed.path, calls), resume=True))
    assert [s.model_dump() for s in states(crashed)] == [s.model_dump() for s in states(clean)]
    # Only the interrupted rollout is paid for again (a rollout is one unit): its first agent's
    # call that had succeeded, and the failed call.
    assert len(calls.log) == len(clean_calls.log) + 2
    for t in (1, 2):
        for agent in ("retriever", "specialist-multi-hop", "reasoner"):
            a, b = clean.library_dir(t, agent), crashed.library_dir(t, agent)
            assert a.exists() and b.exists()
            assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())


def test_checkpoint_on_the_validation_split(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    d = deps(run.path, Calls(), checkpoint="validation")
    sampled = SamplingSettings.training(top_k=20)
    d = TrainingDeps(
        task=d.task,
        provider=d.provider,
        config=d.config.model_copy(update={"iterations": 1, "validation_sampling": sampled}),
        run=d.run,
        methods=METHODS,
    )
    asyncio.run(run_training(d))
    validation = run.validation.read()
    # The state X_r of each round (the base libraries under the round's team) ran V once.
    assert sorted((v.iteration, v.question_id, v.variant) for v in validation) == [
        (1, "v0", "base"),
        (2, "v0", "base"),
    ]
    assert len({v.unit_id for v in validation}) == 2  # another state, another execution
    # Sampled validation is seeded as for every method: by question and repeat only.
    shared_seed = derive_seed(d.config.seed, validation_seed_id("v0", 0))
    assert [v.rollout.seed for v in validation] == [shared_seed, shared_seed]
    scores = [s.round.validation_score for s in states(run) if s.round is not None]
    assert scores == [1.0, 1.0]
    assert "Best round on the validation split: 1" in run.report_path.read_text()
