"""`grse demo` as a user types it, its output piped to a file (`grse demo > demo.log`): the
smallest sizes, the actor on the embedded small model, a probe of two questions. The log must
read as a log (every table row whole on one line, nothing wrapped inside a cell); the run's
report.md must hold the planted-skill table the terminal showed and the test comparison of
both libraries question by question; the first plan must carry every planted skill's measured
effect, a harmful one as low utility.

The critic and the optimizer answer from the fake OpenAI-compatible server, as a remote critic
would through `GRSE_CRITIC_BASE_URL`: on the small model their four 700-token critic calls took
373 s of the demo's 490 s, and what this test checks is the output, the probe's credit and the
comparison, not the critic.

    python -m pytest -m engine tests/integration/test_demo_pipe_engine.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from grse_graph.tasks.planted import demo_planted
from grse_graph.training.planted_table import PLANTED_TITLE
from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import SCRIPTED_JUDGES, FakeOpenAIServer

DEMO_TIMEOUT_S = 1200
"""A guard against a hung demo, not a bound."""
PROBE_BUDGET = 10
"""Leave-one-out over the four planted skills on the fewest questions a probe reads (two):
2 x (4 + 1) team runs."""
BORDER_CHARS = set("─━│┃┏┓┗┛┡┩└┘├┤┼╇╈┳┻┬┴═║╔╗╚╝ ")


def _planted_rows(text: str) -> list[str]:
    """The lines of the planted-skill table's body (a row names its agent first)."""
    start = text.index(PLANTED_TITLE)
    lines = text[start:].splitlines()[1:]
    rows = []
    for line in lines:
        cells = [cell.strip() for cell in line.strip("│┃| ").split("│")]
        if cells and cells[0] in {"retriever", "reasoner"}:
            rows.append(line)
        elif rows and not set(line) <= BORDER_CHARS:
            break
    return rows


@pytest.mark.engine
def test_a_piped_small_demo_prints_whole_rows_and_reports_the_planted_table(
    tmp_path: Path,
) -> None:
    run = tmp_path / "demo"
    log = tmp_path / "demo.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRSE_")}
    env.update(LANGSMITH_TRACING="false", HF_HUB_OFFLINE="1")
    server = FakeOpenAIServer()
    grse = shutil.which("grse")
    assert grse is not None, "the grse command is not installed (pip install -e '.[local]')"
    command = [
        *(grse, "demo"),
        *("--model", "small", "--batch-size", "1", "--test-limit", "2"),
        *("--probe-questions", "2", "--probe-budget", str(PROBE_BUDGET)),
        *("--out", str(run)),
    ]
    with server, log.open("w", encoding="utf-8") as out:
        env.update(server.env(roles=SCRIPTED_JUDGES))
        done = subprocess.run(
            command,
            stdout=out,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            timeout=DEMO_TIMEOUT_S,
            check=False,
        )
    text = log.read_text(encoding="utf-8")
    assert done.returncode == 0, done.stderr[-2000:] + text[-2000:]
    rows = _planted_rows(text)
    # The demo's planted library: two helpful and two harmful skills, one row each.
    assert len(rows) == 4, text
    for row in rows:
        # A whole row: the agent, the skill, its kind and its fate all on this one line.
        assert any(kind in row for kind in ("helpful", "harmful")), row
        assert any(fate in row for fate in ("kept", "refined", "pruned", "merged")), row
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "## Planted skills: credit and fate" in report
    for row in rows:
        skill = [cell.strip() for cell in row.strip("│┃| ").split("│")][1]
        assert skill in report, skill
    # Both libraries tested on the same two questions and compared one by one.
    assert "## Test: planted vs trained libraries" in report
    assert "2 test questions, greedy decoding" in report
    # The probe measured every planted skill, and its effects entered the first plan.
    folder = RunFolder(run)
    probe = folder.probe_results.get("1")
    assert probe is not None and probe.result.runs == PROBE_BUDGET
    plan = folder.aggregates.get("1")
    assert plan is not None
    planted = {(s.agent, s.skill) for s in demo_planted().skills}
    assert {(e.agent, e.skill_id) for e in plan.result.probe_evidence} == planted
    for evidence in plan.result.probe_evidence:
        if evidence.verdict == "hurts":
            direction = plan.result.direction(evidence.agent, evidence.skill_id)
            assert direction is not None and direction.verdict == "low_utility"
