"""The round loop with the non-default options of rows 6, 17, 18 and 19 B on: a routed
specialist runs in the reasoner's place for the questions routed to it, the round after it
drops, the drop reverts the previous round's edit, a shadow skill that fails its evaluation is
disabled, and a run interrupted in round 2 resumes to exactly the states of a clean run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from grse_graph.training.runner import run_training
from tests.unit.methods.skillmas.skillmas_fakes import (
    Calls,
    FakeProvider,
    InjectedFailure,
    colour_actor,
)
from tests.unit.methods.skillmas.test_skillmas_loop import (
    METHODS,
    RunFolder,
    TrainingDeps,
    deps,
    repair_responder,
    states,
)

OPTIONS = {
    "restructure": "code",
    "specialist_mode": "route",
    "drop_policy": "demote",
    "pool_counting": "cumulative",
    "pool_disable_after": 1,
    "executor_credit": "local",
}


def misled_actor(messages: list[BaseMessage]) -> str:
    """Wrong whenever it was given the round-1 patch skill, else the colour actor."""
    text = " ".join(str(m.content) for m in messages)
    return "Answer: red" if "## Guards" in text else colour_actor(messages)


def options_deps(path: Path, calls: Calls) -> TrainingDeps:
    d = deps(path, calls, **OPTIONS)
    return TrainingDeps(
        task=d.task,
        provider=FakeProvider(repair_responder, calls, actor=misled_actor),
        config=d.config,
        run=d.run,
        methods=METHODS,
    )


def test_options_route_demote_disable_and_resume_exactly(tmp_path: Path) -> None:
    clean = RunFolder(tmp_path / "clean")
    clean_calls = Calls()
    asyncio.run(run_training(options_deps(clean.path, clean_calls)))
    found = states(clean)
    one, two = found[1], found[2]
    assert one.round is not None and two.round is not None
    added = one.round.restructuring
    assert added is not None and added.action == "add" and added.slot == "reasoner"
    assert [(m.name, m.slot) for m in one.members] == [
        ("retriever", None),
        ("reasoner", None),
        ("specialist-multi-hop", "reasoner"),
    ]
    assert one.undo is not None and one.undo.edit == added
    # round 2: each question ran either the reasoner or the specialist in the reasoner's slot
    round2 = [r.rollout for r in clean.rollouts.read() if r.iteration == 2]
    slots = {tuple(s.agent for s in r.steps) for r in round2}
    assert slots <= {("retriever", "reasoner"), ("retriever", "specialist-multi-hop")}
    assert ("retriever", "specialist-multi-hop") in slots
    assert two.round.drop is not None  # the patch skill misled the reasoner
    assert two.round.reverted is not None and two.round.reverted.action == "add"
    assert [a.kind for a in two.round.actions if a.agent == "specialist-multi-hop"] == ["demote"]
    disabled = [d for d in two.round.pool if d.decision == "disable"]
    assert [d.skill for d in disabled] == ["multi-hop-rl-r1"]
    assert two.status["reasoner"]["multi-hop-rl-r1"] == "disabled"
    assert "reasoner/multi-hop-rl-r1" not in two.pool_tallies
    report = clean.report_path.read_text()
    assert "specialist-multi-hop (routed for reasoner)" in report
    assert "reverted (drop): add of specialist-multi-hop" in report
    assert "| disable: success rate 0.00 below 0.6 (1 failed evaluations) |" in report
    # interrupted in round 2, resumed: the same states (tables, pool tallies, undo, team)
    crashed = RunFolder(tmp_path / "crashed")
    calls = Calls(fail_on=6 * 2 + 1 + 1 + 3)
    with pytest.raises(InjectedFailure):
        asyncio.run(run_training(options_deps(crashed.path, calls)))
    assert [s.iteration for s in states(crashed)] == [0, 1]
    calls.fail_on = None
    asyncio.run(run_training(options_deps(crashed.path, calls), resume=True))
    assert [s.model_dump() for s in states(crashed)] == [s.model_dump() for s in found]

    def routes(run: RunFolder) -> dict[str, list[str]]:
        return {r.unit_id: [s.agent for s in r.rollout.steps] for r in run.rollouts.read()}

    assert routes(crashed) == routes(clean)  # the seeded router routed the same way


def test_cumulative_tallies_survive_a_resume_between_rounds(tmp_path: Path) -> None:
    """A shadow skill still waiting after round 2 (no disable) has its cumulative tally in the
    state, and a run interrupted in round 3 resumes from it to the clean run's states."""
    held = {"pool_disable_after": None, "measure_final": False}

    def three_rounds(path: Path, calls: Calls, iterations: int) -> TrainingDeps:
        d = options_deps(path, calls)
        method = d.config.method.model_copy(update=held)
        config = d.config.model_copy(update={"iterations": iterations, "method": method})
        return TrainingDeps(
            task=d.task, provider=d.provider, config=config, run=d.run, methods=METHODS
        )

    two_rounds = Calls()
    asyncio.run(run_training(three_rounds(tmp_path / "count", two_rounds, 2)))
    clean = RunFolder(tmp_path / "clean")
    asyncio.run(run_training(three_rounds(clean.path, Calls(), 3)))
    crashed = RunFolder(tmp_path / "crashed")
    calls = Calls(fail_on=len(two_rounds.log) + 1)  # the first call of round 3
    with pytest.raises(InjectedFailure):
        asyncio.run(run_training(three_rounds(crashed.path, calls, 3)))
    saved = states(crashed)[-1]
    assert saved.iteration == 2
    tally = saved.pool_tallies["reasoner/multi-hop-rl-r1"]
    assert tally.uses > 0 and tally.failed_evaluations == 1
    calls.fail_on = None
    asyncio.run(run_training(three_rounds(crashed.path, calls, 3), resume=True))
    assert [s.model_dump() for s in states(crashed)] == [s.model_dump() for s in states(clean)]
    three = states(clean)[3].round
    assert three is not None
    # the forge runs before the pool: the waiting skill is pruned (n >= 5, q < 0.05) before
    # its third evaluation (spec 5.6.1), and its tally leaves the state with it
    assert ("prune", "multi-hop-rl-r1") in [(x.kind, x.skill) for x in three.actions]
    assert "reasoner/multi-hop-rl-r1" not in states(clean)[3].pool_tallies
