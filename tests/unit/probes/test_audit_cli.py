"""`grse skills audit` through Typer's test runner: every input error is one line and exit 1
before any engine starts, and a full audit against the fake OpenAI server writes its files,
prints the per-skill JSON list and resumes (no engine)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from grse_graph.cli import audit_cmd, build_app
from grse_graph.cli.audit_cmd import audit_table
from grse_graph.errors import GrseError
from grse_graph.probes import PROBES_FILE
from grse_graph.probes.report import AUDIT_FILE, CHART_FILE, REPORT_FILE, AuditReport
from grse_graph.skills import Skill, SkillLibrary, export_pack
from tests.fakeserver import FakeOpenAIServer

RECORD_FIELDS = {"agent", "skill", "effect", "low", "high", "questions", "invocations", "verdict"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()


def _library(path: Path, agent: str = "reasoner", names: tuple[str, ...] = ("a", "b")) -> Path:
    skills = [Skill.build(name=n, description=f"Use for {n}.", body=f"Do {n}.") for n in names]
    SkillLibrary.build(agent, skills).save(path)
    return path


def _audit(*args: str) -> Any:
    return runner.invoke(build_app(), ["skills", "audit", *args])


@pytest.fixture()
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command gets as far as starting an engine."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the audit reached the engine")

    monkeypatch.setattr(audit_cmd, "actor_provider", refuse)


def _error_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    library = _library(tmp / "lib")
    (tmp / "not-a-library").mkdir()
    (tmp / "not-a-library" / "notes.txt").write_text("hello\n")
    (tmp / "empty").mkdir()
    no_validation = tmp / "no-validation.jsonl"
    no_validation.write_text(
        '{"question": "q1?", "answer": "a", "split": "train"}\n'
        '{"question": "q2?", "answer": "b", "split": "test"}\n'
    )
    demo = ["--task", "demo"]
    return {
        "missing library folder": (
            [*demo, "--library", f"reasoner={tmp / 'missing'}"],
            "is not a folder",
        ),
        "not a library": (
            [*demo, "--library", f"reasoner={tmp / 'not-a-library'}"],
            "a library holds only skill folders",
        ),
        "no such agent": ([*demo, "--library", f"critic={library}"], "no agent 'critic'"),
        "missing pack": ([*demo, "--pack", str(tmp / "missing")], "not a pack folder"),
        "not a pack": ([*demo, "--pack", str(library)], "not a skill pack"),
        "pack and library": (
            [*demo, "--pack", str(tmp / "p"), "--library", f"reasoner={library}"],
            "give the libraries one way",
        ),
        "no libraries": (demo, "nothing to audit"),
        "limit 0": ([*demo, "--library", f"reasoner={library}", "--limit", "0"], "no questions"),
        "split without questions": (
            ["--task", "jsonl", "--data", str(no_validation), "--library", f"reasoner={library}"],
            "no split 'validation'",
        ),
        "budget too small": (
            [*demo, "--library", f"reasoner={library}", "--budget", "5"],
            "too small to probe 2 skills",
        ),
        "libraries without skills": (
            [*demo, "--library", f"reasoner={tmp / 'empty'}"],
            "every library is empty",
        ),
    }


ERROR_CASES = (
    "missing library folder",
    "not a library",
    "no such agent",
    "missing pack",
    "not a pack",
    "pack and library",
    "no libraries",
    "limit 0",
    "split without questions",
    "budget too small",
    "libraries without skills",
)


@pytest.mark.parametrize("case", ERROR_CASES)
def test_bad_input_is_one_line_and_exit_1_before_any_engine(
    case: str, tmp_path: Path, no_engine: None
) -> None:
    args, expected = _error_cases(tmp_path)[case]
    result = _audit(*args)
    # The `grse` entry point prints a GrseError as one line on stderr and exits 1.
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, GrseError), result.exception
    message = str(result.exception)
    assert expected in message and "\n" not in message


def test_the_real_command_prints_one_line_without_a_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from grse_graph.cli import main; main()",
            "skills",
            "audit",
            "--task",
            "demo",
            "--library",
            f"reasoner={tmp_path / 'missing'}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --library")


def test_help_names_the_defaults() -> None:
    result = runner.invoke(build_app(), ["skills", "audit", "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for option in ("--task", "--split", "--limit", "--library", "--pack", "--budget", "--json"):
        assert option in text
    assert "default validation" in text and "default: 12" in text and "default: 120" in text


def _remote_config(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    config = tmp_path / "grse.toml"
    config.write_text(
        "".join(
            f'[{role}]\nbase_url = "{server.base_url(role)}"\nmodel = "fake"\n'
            for role in ("actor", "critic", "optimizer")
        ),
        encoding="utf-8",
    )
    return config


def test_a_full_audit_writes_its_files_prints_json_and_resumes(tmp_path: Path) -> None:
    reasoner = _library(tmp_path / "reasoner")
    retriever = _library(tmp_path / "retriever", agent="retriever", names=("c",))
    out = tmp_path / "audit"
    with FakeOpenAIServer() as server:
        args = [
            "--task",
            "demo",
            "--limit",
            "2",
            "--library",
            f"reasoner={reasoner}",
            "--library",
            f"retriever={retriever}",
            "--config",
            str(_remote_config(tmp_path, server)),
            "--out",
            str(out),
            "--json",
        ]
        first = _audit(*args)
        assert first.exit_code == 0, first.output
        requests = server.counts()["actor"]
        again = _audit(*args)
        assert again.exit_code == 0, again.output
        # Every run was found in probes.jsonl: no model call the second time.
        assert server.counts()["actor"] == requests > 0
    records = json.loads(first.stdout)
    assert isinstance(records, list) and len(records) == 3
    assert all(set(r) == RECORD_FIELDS for r in records)
    assert [(r["agent"], r["skill"]) for r in records] == [
        ("retriever", "c"),
        ("reasoner", "a"),
        ("reasoner", "b"),
    ]
    # The fake server never gives the gold answer: nothing helps or hurts.
    assert all(r["verdict"] == "no effect" and r["questions"] == 2 for r in records)
    assert json.loads(again.stdout) == records
    assert "results in" in first.stderr and "results in" not in first.stdout
    header = json.loads((out / AUDIT_FILE).read_text(encoding="utf-8"))["header"]
    assert header["task"] == "demo" and header["split"] == "validation"
    assert header["design"] == "leave_one_out" and header["runs"] == 2 * (3 + 1)
    assert header["runs_resumed"] == header["runs"] and header["budget"] == 120
    assert (out / CHART_FILE).read_bytes().startswith(PNG_SIGNATURE)
    assert "| reasoner | a |" in (out / REPORT_FILE).read_text(encoding="utf-8")
    assert (out / PROBES_FILE).is_file()


def test_the_terminal_gets_the_table_and_the_folder(tmp_path: Path) -> None:
    pack = export_pack(
        {"reasoner": SkillLibrary.load(_library(tmp_path / "r"), agent="reasoner")},
        tmp_path / "pack",
    )
    with FakeOpenAIServer() as server:
        result = _audit(
            "--task",
            "demo",
            "--limit",
            "2",
            "--pack",
            str(pack),
            "--config",
            str(_remote_config(tmp_path, server)),
            "--out",
            str(tmp_path / "audit"),
        )
    assert result.exit_code == 0, result.output
    assert "skill audit demo/validation" in result.stdout
    assert "no effect" in result.stdout
    assert f"results in {tmp_path / 'audit'}" in " ".join(result.stdout.split())


def test_an_80_column_log_keeps_every_number_of_the_table(tmp_path: Path) -> None:
    pack = export_pack(
        {"reasoner": SkillLibrary.load(_library(tmp_path / "r"), agent="reasoner")},
        tmp_path / "pack",
    )
    with FakeOpenAIServer() as server:
        result = _audit(
            "--task", "demo", "--limit", "2", "--pack", str(pack),
            "--config", str(_remote_config(tmp_path, server)),
            "--out", str(tmp_path / "audit"), "--json",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    report = AuditReport.model_validate_json((tmp_path / "audit" / "audit.json").read_text())
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(audit_table(report))
    text = console.export_text()
    assert "…" not in text
    assert all(record["effect"] is not None for record in records)
    for record in records:
        assert f"{record['effect']:+.3f}" in text
