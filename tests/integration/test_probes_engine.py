"""Skill probes on the embedded engine: a 2-question `grse skills audit` of the demo's planted
library through the CLI. Probe credit inside training runs on the engine in the piped demo
(tests/integration/test_demo_pipe_engine.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.probes.report import AUDIT_FILE, REPORT_FILE
from grse_graph.tasks.planted import demo_planted

VERDICTS = {"helps", "hurts", "no effect"}


@pytest.mark.engine
def test_a_two_question_audit_of_the_planted_library_measures_every_skill(
    small_engine_url: str, tmp_path: Path
) -> None:
    planted = demo_planted()
    budget = 2 * (len(planted.skills) + 1)  # leave-one-out on both questions
    out = tmp_path / "audit"
    result = CliRunner().invoke(
        build_app(),
        [
            "skills",
            "audit",
            "--task",
            "demo",
            "--pack",
            str(planted.pack_path()),
            "--limit",
            "2",
            "--budget",
            str(budget),
            "--out",
            str(out),
            "--json",
        ],
        env={"GRSE_ACTOR_BASE_URL": small_engine_url, "GRSE_ACTOR_MAX_TOKENS": "48"},
    )
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert {(r["agent"], r["skill"]) for r in records} == {
        (s.agent, s.skill) for s in planted.skills
    }
    for record in records:
        assert record["verdict"] in VERDICTS
        assert record["questions"] in (0, 1, 2)
        if record["effect"] is not None:
            assert record["low"] <= record["effect"] <= record["high"]
    header = json.loads((out / AUDIT_FILE).read_text(encoding="utf-8"))["header"]
    assert header["design"] == "leave_one_out" and header["runs"] == budget
    # Masking a reasoner skill leaves the retriever's prompt as it was: its step is replayed.
    assert header["reused_steps"] > 0
    assert (out / REPORT_FILE).is_file()
