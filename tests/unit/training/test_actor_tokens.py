"""The actor's calls by stage over a hand-written run folder: each stage read from its own
records (training rollouts, probe runs, the gate's validation, both test folders), reused steps
left out, and the rows compared with the actor's calls in usage.json."""

from __future__ import annotations

from pathlib import Path

from grse_graph.evaluation.records import PredictionRecord
from grse_graph.evaluation.store import EvalFolder
from grse_graph.probes import ProbeRun, ProbeStore
from grse_graph.reproduce.executors import actor_stages
from grse_graph.team.rollout import Rollout, Step, StepUsage
from grse_graph.training.actor_tokens import actor_token_lines, actor_tokens
from grse_graph.training.records import RolloutRecord, ValidationRecord
from grse_graph.training.run_folder import RunFolder


def step(prompt: int, *, reused: bool = False) -> Step:
    usage = StepUsage(prompt_tokens=prompt, completion_tokens=1, model_calls=1)
    return Step(
        index=0, agent="a", system_prompt="", input="", output="", usage=usage, reused=reused
    )


def rollout(rid: str, *steps: Step) -> Rollout:
    return Rollout(rollout_id=rid, question_id="q", steps=list(steps))


def validation(unit_id: str, variant: str, reward: float, *steps: Step) -> ValidationRecord:
    return ValidationRecord(
        iteration=1,
        unit_id=unit_id,
        variant=variant,
        variant_hash=f"h-{variant}",
        question_id="q",
        repeat=0,
        reward=reward,
        rollout=rollout(unit_id, *steps),
    )


def filled(path: Path) -> RunFolder:
    """A run folder with one execution per stage: 2 + 3 + 1 + (1 + 1) calls (the probe's and
    the trained test's reused steps not counted)."""
    run = RunFolder(path)
    run.rollouts.append(
        RolloutRecord(
            iteration=1,
            unit_id="r",
            question_id="q",
            group_index=0,
            seed=1,
            library_hashes={},
            rollout=rollout("r", step(10), step(20)),
        )
    )
    probes = ProbeStore(run.probes_dir)
    probes.append(
        ProbeRun(run_id="p0", question_id="q", reward=1.0, rollout=rollout("p0", step(5)))
    )
    masked = rollout("p1", step(5, reused=True), step(7), step(8))
    probes.append(ProbeRun(run_id="p1", question_id="q", reward=0.0, rollout=masked))
    probes.append(ProbeRun(run_id="p2", question_id="q", error="failed"))
    run.validation.append(validation("v", "base", 1.0, step(3)))
    for label, steps in (("start", [step(4)]), ("final", [step(4, reused=True), step(6)])):
        folder = EvalFolder(run.test_dir(label))
        folder.path.mkdir(parents=True)
        folder.append(
            PredictionRecord(id="q", question="q", answer="a", rollout=rollout(label, *steps))
        )
    return run


def test_every_stage_is_read_from_its_own_records(tmp_path: Path) -> None:
    tokens = actor_tokens(filled(tmp_path))
    calls = {label: stage.model_calls for label, stage in tokens.stages()}
    assert calls == {"training rollouts": 2, "probe": 3, "validation (gate)": 1, "test": 2}
    assert (tokens.probe.prompt_tokens, tokens.probe.executions) == (20, 2)
    assert (tokens.test.prompt_tokens, tokens.test.executions) == (10, 2)
    assert tokens.recorded.model_calls == 8
    assert tokens.ledger_calls is None
    lines = "\n".join(actor_token_lines(tokens))
    assert "| total | 8 | 63 |" in lines
    assert "No usage.json" in lines and "in no record" not in lines


def test_the_rows_add_up_to_the_actor_calls_in_usage_json(tmp_path: Path) -> None:
    run = filled(tmp_path)
    run.write_usage({"roles": {"actor": {"calls": 8}, "critic": {"calls": 5}}})
    lines = "\n".join(actor_token_lines(actor_tokens(run)))
    assert "usage.json counts 8 actor calls: every one is in a row above." in lines
    assert "in no record" not in lines


def test_calls_no_record_holds_get_their_own_row(tmp_path: Path) -> None:
    run = filled(tmp_path)
    run.write_usage({"roles": {"actor": {"calls": 11}}})
    tokens = actor_tokens(run)
    assert tokens.unrecorded_calls == 3
    lines = actor_token_lines(tokens)
    assert "| in no record | 3 | - | - | - | - |" in lines
    assert any(line.startswith("| total | 11 |") for line in lines)
    assert "3 of them are in no record of the run folder" in lines[-1]


def test_a_usage_json_below_the_records_is_said_so(tmp_path: Path) -> None:
    run = filled(tmp_path)
    run.write_usage({"roles": {"actor": {"calls": 6}}})
    tokens = actor_tokens(run)
    assert tokens.unrecorded_calls == 0
    assert "fewer than the records hold" in actor_token_lines(tokens)[-1]


def test_table_11_s_stages_leave_out_replayed_steps(tmp_path: Path) -> None:
    run = filled(tmp_path)
    run.validation.append(validation("v2", "candidate", 0.0, step(3, reused=True), step(9)))
    stages = actor_stages(run)
    assert (stages["rollouts"].calls, stages["rollouts"].prompt_tokens) == (2, 30)
    assert (stages["validation"].calls, stages["validation"].prompt_tokens) == (2, 12)
