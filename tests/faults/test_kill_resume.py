"""SIGKILL of `grse train` inside every stage, then `--resume`: no finished unit is done again,
every artifact reads back, and the model calls add up to those of an uninterrupted run.

One run is killed six times in a row (rollouts, critic, evolve, validation, commit, then the
second iteration's aggregate), each session resuming the last; an uninterrupted run of the same
configuration runs alongside as the reference. The fake server answers deterministically, so
equal requests have equal fingerprints and the two request multisets can be compared.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest

from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import FakeOpenAIServer
from tests.faults.harness import CHAIN_POINTS, Reference, kill_chain, reference_run

pytestmark = pytest.mark.faults


def test_kill_inside_every_stage_then_resume_repeats_no_finished_unit(tmp_path: Path) -> None:
    reference: list[Reference] = []
    # The reference needs nothing from the chain: run it in parallel to halve the wall time.
    thread = threading.Thread(
        target=lambda: reference.append(reference_run(tmp_path, FakeOpenAIServer))
    )
    thread.start()
    steps, final, last_requests = kill_chain(CHAIN_POINTS, tmp_path, FakeOpenAIServer)
    thread.join()
    (uninterrupted,) = reference

    for step in steps:
        where = f"killed in {step.point.stage}"
        assert step.killed.returncode == -9, f"{where}: {step.killed.stderr[-800:]}"
        assert step.problems == [], where
        assert step.repeated == [], where
        if step.point.match is not None:
            # The kill came with the request that was meant to open (or be inside) the stage.
            (killed,) = [r for r in step.requests if r.killed]
            assert step.point.match.accepts(killed.role, killed.tool), where
    commit = next(s for s in steps if s.point.stage == "commit")
    assert 1 not in commit.gate_iterations, "the commit kill must land before the gate record"

    assert final.returncode == 0, final.stderr[-2000:]
    run = RunFolder(tmp_path / "chain")
    assert [g.iteration for g in run.gate.read()] == [1, 2]
    assert run.report_path.is_file()

    made = Counter(r.fingerprint for s in steps for r in s.requests)
    made.update(r.fingerprint for r in last_requests)
    missing = uninterrupted.fingerprints - made
    extra = made - uninterrupted.fingerprints
    assert not missing, "every request of the uninterrupted run was made"
    # Made twice: only each killed request and the earlier calls of its unfinished unit.
    assert sum(extra.values()) <= sum(s.point.repeat_bound for s in steps)
    killed_fingerprints = {r.fingerprint for s in steps for r in s.requests if r.killed}
    assert killed_fingerprints <= set(extra)
