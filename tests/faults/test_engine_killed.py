"""The embedded engine killed in the middle of `grse train`: bounded retries, one clear line,
and `--resume` starts a new engine and finishes the run without redoing finished units.

The team on the real engine (small model) on a five-line task; the critic and the optimizer on
the scripted server, which the kill does not touch (the small model's critique calls run to
their cap and took most of this test's time, and the fault under test is the team's engine).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import SCRIPTED_JUDGES, FakeOpenAIServer
from tests.faults.harness import finish, repeated_units, run_grse, start_grse, unparsable_files
from tests.tiny_task import write_tiny_task

pytestmark = [pytest.mark.engine, pytest.mark.faults]

SMALL_ENGINE_ENV = {
    "GRSE_ACTOR_MAX_TOKENS": "48",
    "GRSE_ENGINE_N_CTX": "4096",
    "GRSE_ENGINE_THREADS": "2",
}


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


def _kill_engine_after_first_rollout(run_path: Path, grse_pid: int, killed: list[int]) -> None:
    deadline = time.monotonic() + 600
    rollouts = run_path / "rollouts.jsonl"
    while time.monotonic() < deadline:
        if rollouts.exists() and rollouts.stat().st_size > 0:
            for child in _children(grse_pid):
                os.kill(child, signal.SIGKILL)
                killed.append(child)
            return
        time.sleep(0.05)


def test_engine_killed_mid_run_gives_one_line_then_resume_starts_a_new_engine(
    tmp_path: Path,
) -> None:
    data = write_tiny_task(tmp_path / "tiny.jsonl")
    flags = ["--task", "jsonl", "--data", str(data), "--iterations", "1", "--batch-size", "1",
             "--group-size", "2", "--validation-size", "2", "--concurrency", "1"]  # fmt: skip
    run_path = tmp_path / "run"
    with FakeOpenAIServer() as scripted:
        env = SMALL_ENGINE_ENV | scripted.env(roles=SCRIPTED_JUDGES)
        _kill_then_resume(flags, run_path, env, tmp_path)


def _kill_then_resume(flags: list[str], run_path: Path, env: dict[str, str], cwd: Path) -> None:
    started = time.perf_counter()
    process = start_grse(
        ["train", *flags, "--model", "small", "--out", str(run_path)],
        env,
        cwd=cwd,
    )
    killed: list[int] = []
    watcher = threading.Thread(
        target=_kill_engine_after_first_rollout, args=(run_path, process.pid, killed)
    )
    watcher.start()
    crashed = finish(process, started, timeout_s=900)
    watcher.join()

    assert killed, "the engine was never found to kill"
    assert crashed.returncode == 1, crashed.stderr[-3000:]
    assert "Traceback" not in crashed.stderr, crashed.stderr[-3000:]
    # Log warnings of the session may come first; the error is the one final line.
    line = crashed.error_lines[-1]
    assert line.startswith("error: ") and "endpoint http://127.0.0.1:" in line, crashed.stderr
    assert "connection failed" in line and line.endswith("(gave up after 3 attempts)"), line
    assert [x for x in crashed.error_lines if x.startswith("error:")] == [line]
    finished_before = [r.unit_id for r in RunFolder(run_path).rollouts.read()]
    assert finished_before
    assert unparsable_files(run_path) == []

    resumed = run_grse(
        ["train", "--resume", str(run_path), "--model", "small"],
        env,
        cwd=cwd,
        timeout_s=900,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    run = RunFolder(run_path)
    assert [g.iteration for g in run.gate.read()] == [1]
    assert [r.unit_id for r in run.rollouts.read()][: len(finished_before)] == finished_before
    assert repeated_units(run_path) == []
    assert unparsable_files(run_path) == []
