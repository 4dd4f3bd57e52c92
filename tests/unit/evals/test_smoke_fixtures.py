"""The smoke fixtures shipped in the package (grse_graph/reproduce/fixtures): invented HotpotQA
and LoCoMo files in the official formats, with just the questions the smoke size uses per split;
`--smoke` runs every table on them (and `--fixtures DIR` on another folder) and says so at the
top of the table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from grse_graph.reproduce.data import SMOKE_FIXTURES, load_fixtures
from grse_graph.reproduce.script import main
from grse_graph.reproduce.settings import load_settings
from grse_graph.tasks.registry import load_task

FIXTURES = SMOKE_FIXTURES
CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop")


def _task(name: str, category: str | None = None):  # type: ignore[no-untyped-def]
    fixtures = load_fixtures(FIXTURES)
    return load_task(
        name,
        fixtures.data(FIXTURES)[name],
        category=category,
        **fixtures.options().get(name, {}),
    )


def _sizes(task) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {name: len(questions) for name, questions in task.splits().items()}


def test_the_fixtures_hold_just_the_smoke_size_per_split() -> None:
    smoke = load_settings().smoke
    wanted = {
        "train": smoke.train_batch,
        "validation": smoke.validation_questions,
        "test": smoke.test_questions,
    }
    assert _sizes(_task("hotpotqa")) == wanted
    for category in CATEGORIES:
        assert _sizes(_task("locomo", category)) == wanted, category
    mixed = _task("locomo")
    assert _sizes(mixed) == {"train": 4, "validation": 4, "test": 4}
    assert {q.category for q in mixed.split("test")} == set(CATEGORIES)


def test_the_fixtures_are_in_the_official_formats() -> None:
    hotpot = json.loads((FIXTURES / "hotpot_dev_distractor_smoke.json").read_text())
    for record in hotpot:
        assert set(record) == {
            "_id",
            "answer",
            "question",
            "supporting_facts",
            "context",
            "type",
            "level",
        }
        assert record["level"] == "hard" and len(record["context"]) == 10
        titles = {title for title, _ in record["context"]}
        assert {title for title, _ in record["supporting_facts"]} <= titles
    locomo = json.loads((FIXTURES / "locomo_smoke.json").read_text())
    assert [s["sample_id"] for s in locomo] == [f"smoke-conv-{i}" for i in range(1, 6)]
    for sample in locomo:
        assert set(sample) == {"sample_id", "qa", "conversation"}
        assert "session_1" in sample["conversation"]
    adversarial = [q for s in locomo for q in s["qa"] if q["category"] == 5]
    assert adversarial and all("adversarial_answer" in q for q in adversarial)


def test_the_fixtures_are_what_their_build_script_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("build", FIXTURES / "build_fixtures.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert json.loads((FIXTURES / "hotpot_dev_distractor_smoke.json").read_text()) == (
        build.build_hotpot()
    )
    assert json.loads((FIXTURES / "locomo_smoke.json").read_text()) == build.build_locomo()


def test_a_table_on_fixtures_says_so_and_never_shares_a_run_with_the_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--smoke", "--dry-run", "--commit", "test123", "--out", str(tmp_path)]
    assert main("table1", args) == 0
    on_smoke = capsys.readouterr().out
    assert "DATA: invented smoke fixtures" in on_smoke
    assert "tasks on fixtures: hotpotqa;" in on_smoke
    assert "hotpotqa: 1 test question (paper 500)" in on_smoke
    assert main("table1", [*args, "--fixtures", str(FIXTURES)]) == 0
    on_fixtures = capsys.readouterr().out
    data = ["--data-hotpotqa", str(FIXTURES / "hotpot_dev_distractor_smoke.json")]
    assert main("table1", [*args, *data]) == 0
    on_file = capsys.readouterr().out
    assert "DATA:" not in on_file
    assert "hotpotqa data: " in on_file and "(from --data-hotpotqa)" in on_file

    def ids(out: str) -> set[str]:
        return {line.split()[0] for line in out.splitlines() if line.startswith("hotpotqa-")}

    # --smoke reads the package's fixtures: the same runs as naming them with --fixtures.
    assert ids(on_smoke) and ids(on_smoke) == ids(on_fixtures)
    assert not ids(on_fixtures) & ids(on_file)
    # A table on the bundled demo alone reads no fixture and says nothing of them.
    assert main("table4_5", [*args, "--design", "demo"]) == 0
    assert "DATA:" not in capsys.readouterr().out


def test_a_broken_fixtures_file_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fixtures.json").write_text('{"about": "x", "tasks": {"hotpotqa": {}}}')
    assert main("table1", ["--smoke", "--dry-run", "--fixtures", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("error: ") and "fixtures.json" in out and "file" in out
