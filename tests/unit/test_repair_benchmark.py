"""`benchmarks/repair.py` without an engine: its dry run (the three runs and their configs, on the
demo and on LoCoMo), the summary tables from constructed results, the printout of finished
methods from their repair.json, and the one-line error of a bad planted file."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from rich.console import Console

from grse_graph.evaluation.records import EvalSummary, GroupSummary, PredictionRecord
from grse_graph.evaluation.transitions import LibraryComparison, compare_predictions
from grse_graph.tasks.planted import demo_planted, locomo_planted
from grse_graph.training.demo import DemoResult
from grse_graph.training.repair import PlantedSkillOutcome
from grse_graph.training.runner import TrainResult

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "repair.py"
LOCOMO_MINI = REPO / "tests" / "fixtures" / "tasks" / "locomo_mini.json"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("repair_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: pydantic and dataclasses resolve its annotations through it.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    # rich wraps at COLUMNS; the tests read whole table rows.
    monkeypatch.setenv("COLUMNS", "240")


def dry_run(bench: ModuleType, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    bench.main([*argv, "--dry-run"])
    return capsys.readouterr().out


def run_lines(out: str) -> dict[str, str]:
    """The dry run's `  <label>: method ...` lines by label."""
    lines = out.split("runs (", 1)[1].split("config of", 1)[0].splitlines()[1:]
    return {line.split(":", 1)[0].strip(): line for line in lines if line.strip()}


def test_dry_run_prints_three_runs_with_their_configs(
    bench: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = dry_run(bench, capsys, "--out", str(tmp_path))
    runs = run_lines(out)
    assert list(runs) == ["grse", "grse+probe", "maskills"]
    assert "method grse, probe off, task demo" in runs["grse"]
    assert "method grse, probe on (leave_one_out" in runs["grse+probe"]
    assert "method maskills, probe off, task demo" in runs["maskills"]
    assert all("new: would train and test" in line for line in runs.values())
    assert f"{tmp_path / 'test_start'} (new)" in out
    assert "first 24 test questions" in out  # the whole demo test split by default
    assert "note:" not in out  # the planted library is the demo's own

    # The configs: the first in full, the others by what differs from it.
    full = out.split("config of grse (its run folder's config.json):\n", 1)[1]
    first = json.loads(full.split("\nconfig of grse+probe", 1)[0])
    pack = demo_planted().pack_path().resolve()
    assert first["init_libraries"] == {
        "retriever": str(pack / "retriever" / "skills"),
        "reasoner": str(pack / "reasoner" / "skills"),
    }
    assert first["probe"] is None and first["task"] == "demo"
    assert first["schedule"]["induce_every"] == 0
    probe_diff = out.split("config of grse+probe: as grse's but\n", 1)[1].split("config of")[0]
    assert [line.split(":")[0].strip() for line in probe_diff.splitlines()] == ["probe"]
    maskills_diff = out.split("config of maskills: as grse's but\n", 1)[1]
    assert [line.split(":")[0].strip() for line in maskills_diff.splitlines()] == ["method"]
    assert '"name": "maskills"' in maskills_diff

    # And the objects behind the printout.
    specs, plan = bench.make_plan(bench.parse_args(["--out", str(tmp_path)]))
    assert [s.label for s in specs] == ["grse", "grse+probe", "maskills"]
    assert {label: c.probe is not None for label, c in plan.configs.items()} == {
        "grse": False,
        "grse+probe": True,
        "maskills": False,
    }
    assert {c.method.name for c in plan.configs.values()} == {"grse", "maskills"}
    assert all(c.init_libraries == demo_planted().library_folders() for c in plan.configs.values())
    assert plan.test_limit is None and plan.tested == 24
    assert not tmp_path.joinpath("grse").exists()  # a dry run writes nothing


def locomo_file(folder: Path) -> Path:
    """A LoCoMo file of 5 conversations (the split's 2 train, 2 validation, 1 test), each a copy
    of the mini fixture's first sample (questions of every category), renamed."""
    first = json.loads(LOCOMO_MINI.read_text(encoding="utf-8"))[0]
    copies = [{**first, "sample_id": f"conv-{i}"} for i in range(5)]
    path = folder / "locomo10.json"
    path.write_text(json.dumps(copies), encoding="utf-8")
    return path


def test_dry_run_on_locomo_overrides_the_task(
    bench: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = locomo_file(tmp_path)
    out = dry_run(bench, capsys, "--task", "locomo", "--data", str(data), "--out", str(tmp_path))
    assert "note: the planted library was written" not in out  # the paper's LoCoMo library
    assert "task locomo, category single-hop" in out
    runs = run_lines(out)
    assert list(runs) == ["grse", "grse+probe", "maskills"]
    assert all("task locomo" in line for line in runs.values())
    _, plan = bench.make_plan(
        bench.parse_args(["--task", "locomo", "--data", str(data), "--category", "temporal"])
    )
    for config in plan.configs.values():
        assert (config.task, config.data, config.category) == (
            "locomo",
            str(data.resolve()),
            "temporal",
        )
        assert config.init_libraries == locomo_planted().library_folders()
    assert plan.test_limit == bench.LOCOMO_TEST_LIMIT
    demo = str(demo_planted().source)
    out = dry_run(bench, capsys, "--task", "locomo", "--data", str(data), "--planted", demo)
    assert "note: the planted library was written for the demo task" in out


def test_command_line_errors_are_one_line(bench: ModuleType, tmp_path: Path) -> None:
    for argv, message in (
        (["--methods", "grse,nope"], "unknown method 'nope'"),
        (["--task", "locomo"], "--task locomo needs --data"),
        (["--category", "temporal"], "--category is for --task locomo"),
    ):
        with pytest.raises(SystemExit) as raised:
            bench.main([*argv, "--dry-run"])
        assert message in str(raised.value.code)


def test_bad_planted_path_is_one_line_and_exit_code_1(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--planted", str(tmp_path / "missing.json"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "missing.json" in lines[0]


# -- results ------------------------------------------------------------------------------------


def outcome(
    skill: str, kind: str, u1: float | None, fate: str = "kept", agent: str = "retriever"
) -> PlantedSkillOutcome:
    return PlantedSkillOutcome.model_validate(
        {"agent": agent, "skill": skill, "kind": kind, "u1": u1, "fate": fate}
    )


def comparison(before: list[float], after: list[float]) -> LibraryComparison:
    def records(rewards: list[float]) -> list[PredictionRecord]:
        return [
            PredictionRecord(id=f"q{i}", question="?", answer="a", prediction="a", reward=r)
            for i, r in enumerate(rewards)
        ]

    return compare_predictions(
        records(before), records(after), before_label="planted", resamples=200
    )


OUTCOMES = [
    outcome("evidence-handoff", "helpful", 0.6),
    outcome("main-entity-focus", "harmful", -0.8, "pruned", "retriever"),
    outcome("evidence-summary", "harmful", 0.2, "refined"),
    outcome("exact-span-answer", "helpful", None, "refined", "reasoner"),
    outcome("full-sentence-answer", "harmful", -0.4, "merged", "reasoner"),
    outcome("verbatim-support-check", "harmful", None, agent="reasoner"),
]


def table_text(table: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=240, color_system=None).print(table)
    return out.getvalue()


def row_of(text: str, label: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"│ {label} "))
    return [cell.strip() for cell in line.strip("│").split("│")]


def test_measures_and_summary_table(bench: ModuleType) -> None:
    m = bench.repair_measures(OUTCOMES, comparison([0, 1, 0, 0.5], [1, 1, 0, 1]), 150.0)
    assert (m.skills, m.signs_correct, m.signs_wrong) == (6, 3, 1)
    # helpful mean 0.6, harmful mean (-0.8 + 0.2 - 0.4) / 3
    assert m.separation == pytest.approx(0.6 + 1.0 / 3)
    assert (m.harmful, m.harmful_removed, m.harmful_rewritten) == (4, 2, 1)
    assert (m.helpful, m.helpful_kept, m.repaired) == (2, 2, 5)
    assert (m.planted_reward, m.trained_reward) == (0.375, 0.75)
    assert m.difference == pytest.approx(0.375) and m.minutes == 2.5
    silent = bench.repair_measures(
        [outcome("a", "helpful", None), outcome("b", "harmful", -0.5, "pruned")],
        comparison([1], [1]),
        60.0,
    )
    text = table_text(
        bench.summary_table([("grse", m), ("maskills", silent)], "t", caption="note: demo")
    )
    assert row_of(text, "grse") == [
        "grse",
        "3/6",
        "+0.93",
        "2/4 (+1 rewritten)",
        "2/2",
        "0.375",
        "0.750",
        f"+0.375 [{m.difference_low:+.3f}, {m.difference_high:+.3f}]",
        "2.5",
    ]
    assert row_of(text, "maskills")[1:5] == ["1/2", "n/a", "1/1", "1/1"]
    assert "note: demo" in text


def finished_run(bench: ModuleType, label: str, config: Any, wall_s: float) -> Any:
    """A RepairRun as a finished method leaves it (constructed: no engine)."""
    group = GroupSummary(count=4, failed=0, reward=0.5, metrics={}, states={})
    summary = EvalSummary(
        task="demo", split="test", method="team", questions=4, finished=4, failed=0, overall=group
    )
    result = DemoResult(
        training=TrainResult(run_dir="x", iterations_done=1, gates=[], final_libraries={}),
        start=summary,
        final=summary,
        comparison=comparison([0, 1, 0, 0.5], [1, 1, 0, 1]),
        learned=[],
        planted=OUTCOMES if label != "maskills" else OUTCOMES[:2],
        training_s=100.0,
        test_s=50.0,
    )
    return bench.RepairRun(
        method=label,
        credit_method=config.method.name,
        probe=config.probe is not None,
        planted_file=str(demo_planted().source),
        planted_task="demo",
        model="default",
        test_limit=None,
        resumed=False,
        config=config,
        result=result,
        wall_s=wall_s,
        usage={},
    )


def test_finished_methods_are_printed_not_run(
    bench: ModuleType,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _, plan = bench.make_plan(bench.parse_args(["--out", str(tmp_path)]))
    for label, config in plan.configs.items():
        run = finished_run(bench, label, config, 120.0)
        folder = tmp_path / label
        folder.mkdir()
        (folder / bench.RESULT_FILE).write_text(run.model_dump_json(indent=2), encoding="utf-8")
        stored = json.loads((folder / bench.RESULT_FILE).read_text(encoding="utf-8"))
        assert stored["measures"]["signs_correct"] == (3 if label != "maskills" else 2)
        # The derived measures are written for readers and ignored when read back.
        assert bench.RepairRun.model_validate(stored).measures == run.measures

    out = dry_run(bench, capsys, "--out", str(tmp_path))
    assert all("finished: would print" in line for line in run_lines(out).values())

    def no_engine(*args: object, **kwargs: object) -> None:
        raise AssertionError("a finished method was run again")

    monkeypatch.setattr(bench, "run_method", no_engine)
    bench.main(["--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.count("finished earlier, reusing") == 3
    assert ": warning:" not in out and ": failed:" not in out
    assert "the planted skills: credit and fate" in out  # print_planted, per method
    assert "paired difference +0.375" in out  # print_comparison's difference line
    per_skill = out.split("planted skills: critic u1 (sign) and fate per method", 1)[1]
    assert row_of(per_skill, "retriever")[:6] == [
        "retriever",
        "evidence-handoff",
        "helpful",
        "+0.60 right, kept",
        "+0.60 right, kept",
        "+0.60 right, kept",
    ]
    assert "verbatim-support-check" in per_skill and "│ -" in per_skill  # maskills lacks it
    summary = out.split("repair of planted.json on demo", 1)[1]
    assert row_of(summary, "grse+probe")[1:5] == ["3/6", "+0.93", "2/4 (+1 rewritten)", "2/2"]
    assert row_of(summary, "maskills")[1] == "2/2"
