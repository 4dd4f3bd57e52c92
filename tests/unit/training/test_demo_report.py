"""What `grse demo` writes into report.md, on fakes: the planted-skill table (the outcomes the
demo prints, read once), the probe's effects chart drawn by the skill audit's code, and the
actor's calls by stage adding up to every actor call the run made."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from grse_graph.probes.report import AuditReport, effects_chart_png
from grse_graph.tasks.planted import demo_planted
from grse_graph.training.demo import DemoResult, learning_config, repair_config, run_demo
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.planted_table import planted_row
from grse_graph.training.run_folder import RunFolder
from tests.unit.training.fakes import CallLog, CountingProvider
from tests.unit.training.test_demo_printout import TinyTaskWithContext

STAGES = ("training rollouts", "probe", "validation (gate)", "test")


def demo_run(tmp_path: Path, log: CallLog, *, planted: bool, honours_n: bool) -> DemoResult:
    """`run_demo` on the tiny task, from the demo's planted library (probe credit on) or from
    empty libraries; usage.json counts the fake's actor calls as the ledger would."""
    library = demo_planted()
    sizes = {"task": "tiny", "group_size": 2, "batch_size": 2, "validation_size": 2}
    config = (
        repair_config(library, concurrency=1, **sizes)
        if planted
        else learning_config(concurrency=1, **sizes)
    )
    deps = TrainingDeps(
        task=TinyTaskWithContext(),
        provider=CountingProvider(log, honours_n=honours_n),
        config=config,
        run=RunFolder(tmp_path),
        usage=lambda: {"roles": {"actor": {"calls": log.count("actor")}}},
    )
    return asyncio.run(
        run_demo(
            config,
            deps,
            test_limit=None,
            console=Console(file=io.StringIO()),
            planted=library if planted else None,
        )
    )


def stage_calls(report: str) -> dict[str, int]:
    """The model calls column of the report's actor table, by row label."""
    section = report.split("### Actor tokens by stage", 1)[1]
    rows = re.findall(r"^\| ([^|]+?) \| (\d+) \|", section, flags=re.MULTILINE)
    return {label: int(calls) for label, calls in rows}


@pytest.mark.parametrize("honours_n", [False, True], ids=["own-openings", "shared-opening"])
def test_every_actor_call_of_the_demo_is_in_a_stage_row(tmp_path: Path, honours_n: bool) -> None:
    log = CallLog()
    demo_run(tmp_path, log, planted=True, honours_n=honours_n)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    calls = stage_calls(report)
    # Every stage made actor calls, and the stage rows alone add up to all of them: a stage
    # whose calls the table missed would leave an "in no record" row and a smaller sum.
    assert [label for label in STAGES if calls.get(label, 0) == 0] == []
    assert "in no record" not in calls
    assert sum(calls[label] for label in STAGES) == calls["total"] == log.count("actor")
    assert f"usage.json counts {log.count('actor')} actor calls: every one is in" in report


def test_the_demo_report_has_the_planted_table_it_prints(tmp_path: Path) -> None:
    result = demo_run(tmp_path, CallLog(), planted=True, honours_n=False)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Planted skills: credit and fate" in report
    assert "| agent | skill | kind | critic u1 | probe effect [80%] | decided by | fate |" in report
    planted = demo_planted()
    assert [(o.agent, o.skill, o.kind) for o in result.planted] == [
        (e.agent, e.skill, e.kind) for e in planted.skills
    ]
    for outcome in result.planted:
        assert outcome.probe_low is not None and outcome.probe_high is not None
        # The row the console prints is the row report.md holds.
        assert "| " + " | ".join(planted_row(outcome, probe=True)) + " |" in report
    assert "harmful removed or rewritten 0 of 2; helpful kept 2 of 2;" in report


def test_the_demo_report_embeds_the_audits_effects_chart(tmp_path: Path) -> None:
    demo_run(tmp_path, CallLog(), planted=True, honours_n=False)
    run = RunFolder(tmp_path)
    report = run.report_path.read_text(encoding="utf-8")
    assert "![skill effects with 80% intervals](plots/effects_iter_1.png)" in report
    chart = run.plots_dir / "effects_iter_1.png"
    (record,) = run.probe_results.read()
    # Drawn by the audit's own function from the iteration's probe result.
    audit = AuditReport.from_result(record.result, task="tiny", split="train")
    assert chart.read_bytes() == effects_chart_png(audit)
    assert "- plan: leave-one-out on 4 questions, 4 skills: 20 team runs" in report


def test_a_demo_from_empty_libraries_has_no_planted_table_and_no_chart(tmp_path: Path) -> None:
    log = CallLog()
    result = demo_run(tmp_path, log, planted=False, honours_n=False)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert result.planted == []
    assert "## Planted skills" not in report and "## Probe credit" not in report
    assert not list((tmp_path / "plots").glob("effects_iter_*.png"))
    calls = stage_calls(report)
    assert calls["probe"] == 0
    assert sum(calls[label] for label in STAGES) == log.count("actor")
