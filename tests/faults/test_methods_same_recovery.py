"""Every credit method runs through the one training graph, so each meets the same faults with
the same recovery: `grse train --method M` against the fake server, with the same faults for
GRSE, MASkills and SkillMAS.

One run per method, three sessions on one run folder:

1. every actor request about one training question is refused (HTTP 400, as a server refuses
   a prompt beyond its context) and the run is SIGKILLed as soon as iteration 1's libraries
   are written: the refused rollouts are recorded as failed and scored 0, the run goes on
   until the kill;
2. `--resume` against a dead actor endpoint (HTTP 500 on every request): the run stops with
   one error line naming the endpoint;
3. `--resume` once the endpoint is back (the refusals still on): the run finishes both
   iterations, every rollout of the refused question in every round is failed with reward 0,
   no finished unit was done twice and every artifact reads back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import FakeOpenAIServer, Fault, Match
from tests.faults.harness import (
    Finished,
    finish,
    kill_when_exists,
    repeated_units,
    run_grse,
    start_grse,
    unparsable_files,
)

pytestmark = pytest.mark.faults

METHODS = ("grse", "maskills", "skillmas")
REFUSED_TEXT = "colour is the barn"
"""Text of the training question whose every actor request the server refuses."""

QUESTIONS = [
    {
        "id": "t0",
        "question": "What colour is the barn?",
        "answer": "red",
        "context": "The barn is red.",
        "category": "single-hop",
        "split": "train",
    },
    {
        "id": "t1",
        "question": "What colour is the door of the house next to the mill?",
        "answer": "green",
        "context": "The house next to the mill has a green door.",
        "category": "multi-hop",
        "split": "train",
    },
    {
        "id": "v0",
        "question": "What colour is the gate?",
        "answer": "white",
        "context": "The gate is white.",
        "category": "single-hop",
        "split": "validation",
    },
    {
        "id": "x0",
        "question": "What colour is the roof?",
        "answer": "black",
        "context": "The roof is black.",
        "category": "single-hop",
        "split": "test",
    },
]


def train_flags(method: str, data: Path) -> list[str]:
    """Two iterations over both training questions; only loop-level settings every method
    reads (GRSE adds its group size)."""
    flags = ["--task", "jsonl", "--data", str(data), "--method", method, "--iterations", "2"]
    flags += ["--batch-size", "2", "--concurrency", "1", "--library-limit", "2"]
    return flags + (["--group-size", "2"] if method == "grse" else [])


def refusal() -> Fault:
    return Fault("refused", Match(role="actor"), count=10**6, text=REFUSED_TEXT)


def killed_after_iteration_one(
    args: list[str], server: FakeOpenAIServer, cwd: Path, run_path: Path
) -> Finished:
    """Run `grse ARGS`, SIGKILLed as soon as iteration 1's libraries exist."""
    started = time.perf_counter()
    process = start_grse(args, server.env(max_retries=1), cwd=cwd)
    watcher = kill_when_exists(run_path / "libraries" / "iter_1", process.pid)
    done = finish(process, started)
    watcher.kill()
    watcher.wait()
    return done


@pytest.mark.parametrize("method", METHODS)
def test_every_method_recovers_the_same_way_from_the_same_faults(
    method: str, tmp_path: Path
) -> None:
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    run_path = tmp_path / "run"
    resume = ["train", "--resume", "run"]
    with FakeOpenAIServer(faults=[refusal()]) as server:
        first = ["train", *train_flags(method, data), "--out", "run"]
        killed = killed_after_iteration_one(first, server, tmp_path, run_path)
        # A refused request costs its rollout, not the run: it went on until the kill.
        assert killed.returncode == -9, killed.stderr[-2000:]
        assert any(r.fault == "refused" for r in server.records)

        server.faults[:] = [Fault("http_500", Match(role="actor"), count=10**6)]
        dead = run_grse(resume, server.env(max_retries=1), cwd=tmp_path)
        assert dead.returncode == 1, dead.stderr[-2000:]
        (line,) = dead.error_lines
        assert line.startswith(f"error: actor endpoint {server.base_url('actor')}: HTTP 500")

        server.faults[:] = [refusal()]
        final = run_grse(resume, server.env(max_retries=1), cwd=tmp_path)
        assert final.returncode == 0, final.stderr[-2000:]

    run = RunFolder(run_path)
    assert [g.iteration for g in run.gate.read()] == [1, 2]
    assert run.report_path.is_file()
    rollouts = run.rollouts.read()
    refused = [r for r in rollouts if r.question_id == "t0"]
    # In every round (SkillMAS adds its final measurement as round 3).
    assert {r.iteration for r in refused} == {r.iteration for r in rollouts} >= {1, 2}
    for record in refused:
        assert record.rollout.reward == 0.0
        assert record.rollout.error is not None and "ModelRequestRefused" in record.rollout.error
    assert all(r.rollout.error is None for r in rollouts if r.question_id != "t0")
    assert repeated_units(run_path) == []
    assert unparsable_files(run_path) == []
