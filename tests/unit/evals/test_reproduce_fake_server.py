"""Tables 4 + 5 end to end at the smoke size against the fake OpenAI-compatible server (no
engine), in the paper's design (LoCoMo single-hop on the shipped fixtures): the dry run, the
written tables, reuse of finished runs, resume of an unfinished one, and failed cells when the
endpoint is down; the demo design end to end; and the script as a user types it with
`--config` naming a loopback server started on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grse_graph.reproduce.manifest import OUTCOME_FILE
from grse_graph.reproduce.script import main
from grse_graph.reproduce.table import NOT_RUN_AT_SIZE
from tests.fakeserver import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[3]
ARGS = ["--smoke", "--commit", "test123"]


def _env(monkeypatch: pytest.MonkeyPatch, server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    for name, value in server.env(timeout_s=5.0, max_retries=0).items():
        monkeypatch.setenv(name, value)


def test_dry_run_lists_the_runs_with_costs_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer() as server:
        _env(monkeypatch, server)
        assert main("table4_5", [*ARGS, "--dry-run", "--out", str(tmp_path)]) == 0
        assert sum(server.counts().values()) == 0
    out = capsys.readouterr().out
    assert "SMOKE SIZE" in out and "locomo/single-hop grse: G = 2 (paper G = 4)" in out
    lines = [line for line in out.splitlines() if line.startswith("locomo-single-hop-")]
    # The perturbed library's test, its helpful skills alone and two methods (paper mode).
    assert len(lines) == 4
    assert all("new: would run" in line for line in lines)
    assert "[train]" in out and "est. actor" in out and "critic" in out
    assert "estimated optimizer:" in out
    assert not (tmp_path / "runs").exists()


def test_smoke_tables_are_written_then_reused_and_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer() as server:
        _env(monkeypatch, server)
        assert main("table4_5", [*ARGS, "--out", str(tmp_path)]) == 0
        first = sum(server.counts().values())
        table4 = (tmp_path / "table4.md").read_text()
        table5 = (tmp_path / "table5.md").read_text()
        document = json.loads((tmp_path / "table5.json").read_text())
        assert "Cells marked FAILED: 0." in table4 and "Cells marked FAILED: 0." in table5
        assert "| GRSE [fake] |" in table4 and "66.9" in table4  # the paper's number beside ours
        assert "| Helpful skills alone [fake] |" in table4
        assert "Agent 2 (reasoner): verbatim guard" in table5 and "pruned@3" in table5
        assert "Figure 4 not in the text" in table4 and "TEST REPAIR" in table4
        assert (tmp_path / "table5-utilities.png").stat().st_size > 0
        assert document["rows"][0]["cells"]
        runs = sorted((tmp_path / "runs").iterdir())
        assert len(runs) == 4 and all((r / OUTCOME_FILE).exists() for r in runs)
        trained = next(r for r in runs if "-grse-default-" in r.name)
        stages = json.loads((trained / OUTCOME_FILE).read_text())["actor_stages"]
        assert stages["rollouts"]["calls"] > 0 and stages["validation"]["calls"] > 0

        server.reset()
        assert main("table4_5", [*ARGS, "--out", str(tmp_path)]) == 0
        assert sum(server.counts().values()) == 0  # every run finished: reused
        assert "reused" in capsys.readouterr().out

        # An unfinished training run (no outcome.json yet) resumes from its checkpoints:
        # nothing is trained again, only the outcome is written.
        train = next(r for r in runs if "-grse-default-" in r.name)
        (train / OUTCOME_FILE).unlink()
        server.reset()
        assert main("table4_5", [*ARGS, "--out", str(tmp_path)]) == 0
        assert (train / OUTCOME_FILE).exists()
        assert server.counts().get("critic", 0) == 0 and server.counts().get("optimizer", 0) == 0
        assert first > 0


def test_a_dead_endpoint_marks_cells_failed_never_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer() as server:
        _env(monkeypatch, server)
    # The server is stopped: every call fails to connect.
    assert main("table4_5", [*ARGS, "--out", str(tmp_path)]) == 0
    table4 = (tmp_path / "table4.md").read_text()
    rows = [line for line in table4.splitlines() if line.startswith("| GRSE [fake] |")]
    assert rows and "FAILED" in rows[0] and "| 0.0 |" not in rows[0]
    document = json.loads((tmp_path / "table4.json").read_text())
    cells = [c for row in document["rows"] for c in row["cells"].values() if c["text"] is None]
    assert cells and all(c["failed"] and c["mean"] is None for c in cells)
    assert any((r / "failure.json").exists() for r in (tmp_path / "runs").iterdir())


def test_the_demo_design_is_named_and_plans_the_demos_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main("table4_5", [*ARGS, "--design", "demo", "--dry-run", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("demo-all-")]
    assert len(lines) == 4 and "demo grse: G = 2 (paper G = 4)" in out


def test_the_demo_design_trains_and_tests_both_methods_at_the_smoke_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its training runs test their starting libraries in the planted evaluation's folder; a
    # team calling tools another way there stopped both methods' rows (e81626c).
    with FakeOpenAIServer() as server:
        _env(monkeypatch, server)
        assert main("table4_5", [*ARGS, "--design", "demo", "--out", str(tmp_path)]) == 0
    document = json.loads((tmp_path / "table4.json").read_text(encoding="utf-8"))
    rows = {row["label"].split(" [")[0]: row["cells"] for row in document["rows"]}
    for label in ("MASkills", "GRSE"):
        for key in ("f1", "delta_f1", "abstention"):
            assert rows[label][key]["mean"] is not None, (label, key, rows[label][key])
    # The smoke size's one test question is a passage question, which has no BLEU (only the
    # demo's conversation questions do): that column is not run at this size, and the header
    # lists it, so the smoke table has no FAILED cell.
    assert all(row["bleu"]["not_run"] and not row["bleu"]["failed"] for row in rows.values())
    assert not [cell for row in rows.values() for cell in row.values() if cell["failed"]]
    (listed,) = [line for line in document["header"] if line.startswith(NOT_RUN_AT_SIZE)]
    assert f"{len(rows)} cell(s)" in listed


def test_a_smoke_table_runs_through_config_on_a_server_started_on_its_own(tmp_path: Path) -> None:
    # The path a researcher takes with vLLM: an OpenAI-compatible server on loopback, started on
    # its own, a grse TOML naming it for every role, and the script as a user types it. The
    # table's calls reach that server and no run starts an engine of its own.
    config = tmp_path / "served.toml"
    out = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRSE_")}
    env.update(HF_HUB_OFFLINE="1", LANGSMITH_TRACING="false")
    with FakeOpenAIServer() as server:
        config.write_text(
            "".join(
                f'[{role}]\nbase_url = "{server.base_url(role)}"\nmodel = "fake"\n'
                "timeout_s = 5.0\nmax_retries = 0\n"
                for role in ("actor", "critic", "optimizer")
            ),
            encoding="utf-8",
        )
        script = ["evals/table4_5_repair.py", "--smoke", "--config", str(config), "--out", str(out)]
        done = subprocess.run(
            [sys.executable, *script],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        served = server.counts()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert served["actor"] > 0 and served["critic"] > 0
    table4 = (out / "table4.md").read_text(encoding="utf-8")
    assert "Cells marked FAILED: 0." in table4 and "| GRSE [fake] |" in table4
    assert list((out / "runs").iterdir())
    assert not list((out / "runs").glob("**/engine*.log")), "a run started its own engine"
