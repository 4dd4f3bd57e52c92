"""Where a table's data comes from (flags, environment variables, fixtures, the Hugging Face
hub, none), the paper's HotpotQA splits by position, the one-line error of a table without its
data (before any run is made) and the header lines stating the data and the mode."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from grse_graph.errors import TaskError
from grse_graph.reproduce.data import (
    SMOKE_FIXTURES,
    DataSource,
    load_fixtures,
    require_data,
    resolve_sources,
)
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import main
from grse_graph.reproduce.settings import load_settings
from grse_graph.tasks.hotpotqa import HF_CONFIG, HF_DATASET, HF_SPLIT, load_hotpotqa

SETTINGS = load_settings()
NO_ENV: dict[str, str] = {}


def _resolve(
    given: Mapping[str, str | None] | None = None,
    env: Mapping[str, str] | None = None,
    fixtures: Path | None = None,
) -> dict[str, DataSource]:
    chosen = (fixtures, load_fixtures(fixtures)) if fixtures is not None else None
    return resolve_sources(SETTINGS, given or {}, env or NO_ENV, chosen)


def test_without_data_hotpotqa_is_the_hub_with_the_paper_s_positions_and_locomo_missing() -> None:
    sources = _resolve()
    assert sources["hotpotqa"].origin == "hub" and sources["hotpotqa"].path is None
    assert sources["hotpotqa"].options == {
        "positions": SETTINGS.table7.hotpotqa.dev_positions.model_dump()
    }
    assert sources["locomo"].origin == "missing" and sources["locomo"].path is None


def test_a_flag_beats_its_variable_and_a_variable_is_read_as_a_file(tmp_path: Path) -> None:
    env = {"GRSE_HOTPOTQA": str(tmp_path / "env.json"), "GRSE_LOCOMO": str(tmp_path / "l")}
    sources = _resolve({"hotpotqa": str(tmp_path / "flag.json")}, env)
    hotpot, locomo = sources["hotpotqa"], sources["locomo"]
    assert (hotpot.origin, hotpot.path) == ("flag", str(tmp_path / "flag.json"))
    assert (locomo.origin, locomo.path) == ("env", str(tmp_path / "l"))
    # A local HotpotQA file is split in file order by Table 7's sizes.
    t7 = SETTINGS.table7.hotpotqa
    assert hotpot.options == {
        "train_size": t7.train,
        "validation_size": t7.validation,
        "test_size": t7.test,
    }
    assert locomo.options == {}
    assert "(from $GRSE_LOCOMO)" in locomo.header()
    assert "split in file order: train 100, validation 50, test 500" in hotpot.header()


def test_fixtures_beat_the_variables_and_a_flag_beats_the_fixtures(tmp_path: Path) -> None:
    env = {"GRSE_LOCOMO": str(tmp_path / "l.json")}
    sources = _resolve({"hotpotqa": str(tmp_path / "h.json")}, env, SMOKE_FIXTURES)
    assert sources["hotpotqa"].origin == "flag"
    assert sources["locomo"].origin == "fixtures"
    assert sources["locomo"].path == str((SMOKE_FIXTURES / "locomo_smoke.json").resolve())


def test_the_paper_s_splits_are_dev_positions_0_99_100_149_and_150_649() -> None:
    dev = [_hf_row(index) for index in range(700)]
    calls: list[tuple[Any, ...]] = []

    def loader(path: str, name: str, split: str) -> Iterable[Mapping[str, Any]]:
        calls.append((path, name, split))
        return dev

    options = _resolve()["hotpotqa"].options
    task = load_hotpotqa(None, loader=loader, **options)
    assert calls == [(HF_DATASET, HF_CONFIG, HF_SPLIT)]
    ids = {name: [q.id for q in questions] for name, questions in task.splits().items()}
    assert ids == {
        "train": [f"q{i}" for i in range(100)],
        "validation": [f"q{i}" for i in range(100, 150)],
        "test": [f"q{i}" for i in range(150, 650)],
    }


def _hf_row(index: int) -> dict[str, Any]:
    return {
        "id": f"q{index}",
        "question": f"Which question is number {index}?",
        "answer": str(index),
        "type": "comparison" if index % 2 else "bridge",
        "level": "hard",
        "supporting_facts": {"title": ["Counting"], "sent_id": [0]},
        "context": {"title": ["Counting"], "sentences": [[f"This is number {index}."]]},
    }


def _spec(task: str, category: str | None = None) -> RunSpec:
    return RunSpec(kind="eval", task=task, category=category, method="empty", actor="a", commit="c")


def test_a_missing_benchmark_is_named_before_any_data_is_loaded() -> None:
    loaded: list[str] = []
    runs = [_spec("hotpotqa"), _spec("locomo", "multi-hop"), _spec("demo")]
    with pytest.raises(TaskError) as error:
        # HotpotQA has the hub route (the hf extra installed or not: the outcome must not
        # depend on the machine); LoCoMo has none, so it is the one named.
        require_data(
            _resolve(), runs, lambda spec: loaded.append(spec.task), datasets_installed=lambda: True
        )
    assert str(error.value) == (
        "locomo: no data: pass --data-locomo PATH (or set $GRSE_LOCOMO) to locomo10.json from "
        "https://github.com/snap-research/locomo"
    )
    assert loaded == []


def test_the_hub_without_datasets_names_the_extra_and_the_flag() -> None:
    with pytest.raises(TaskError) as error:
        require_data(_resolve(), [_spec("hotpotqa")], print, datasets_installed=lambda: False)
    message = str(error.value)
    assert "--data-hotpotqa PATH" in message and "pip install 'grse-graph[hf]'" in message
    assert "hotpot_dev_distractor_v1.json from https://hotpotqa.github.io" in message
    assert "\n" not in message


def test_a_hub_that_does_not_answer_is_one_line_naming_the_flag() -> None:
    def load(spec: RunSpec) -> object:
        try:
            raise ConnectionError("Couldn't reach the Hub\nmore details")
        except ConnectionError as cause:
            raise TaskError("hotpotqa: cannot load") from cause

    with pytest.raises(TaskError) as error:
        require_data(_resolve(), [_spec("hotpotqa")], load, datasets_installed=lambda: True)
    message = str(error.value)
    assert message.startswith("hotpotqa: no data: pass --data-hotpotqa PATH")
    assert message.endswith("): Couldn't reach the Hub")


def test_a_file_that_does_not_load_says_where_its_path_came_from(tmp_path: Path) -> None:
    sources = _resolve(env={"GRSE_LOCOMO": str(tmp_path / "none.json")})

    def load(spec: RunSpec) -> object:
        raise TaskError(f"locomo: {tmp_path / 'none.json'}: no such file")

    with pytest.raises(TaskError, match=r"no such file \(data from \$GRSE_LOCOMO\)$"):
        require_data(sources, [_spec("locomo", "temporal")], load)


def test_every_task_and_category_is_loaded_once() -> None:
    loaded: list[tuple[str, str | None]] = []
    runs = [_spec("locomo", "temporal"), _spec("locomo", "temporal"), _spec("locomo")]
    sources = _resolve(fixtures=SMOKE_FIXTURES)
    require_data(sources, runs, lambda spec: loaded.append((spec.task, spec.category)))
    assert loaded == [("locomo", "temporal"), ("locomo", None)]


@pytest.mark.parametrize("table", list(TABLES))
def test_every_table_dry_runs_at_full_size_without_data(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--dry-run", "--seeds", "1", "--commit", "c0ffee0", "--out", str(tmp_path)]
    assert main(table, args, env=NO_ENV) == 0
    out = capsys.readouterr().out
    assert "estimated actor:" in out and not (tmp_path / "runs").exists()
    if "locomo" in TABLES[table].tasks:
        assert "locomo data: not given (pass --data-locomo PATH" in out
    if "hotpotqa" in TABLES[table].tasks:
        assert "hotpotqa data: hotpotqa/hotpot_qa (distractor, validation)" in out
        assert "dev positions train 0-99, validation 100-149, test 150-649" in out
        assert "test questions (paper 500)" not in out


def test_the_header_states_the_mode_either_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--dry-run", "--smoke", "--commit", "c0ffee0", "--out", str(tmp_path)]
    assert main("table1", args, env=NO_ENV) == 0
    assert "paper's mode: the project's additions off" in capsys.readouterr().out
    assert main("table1", [*args, "--additions"], env=NO_ENV) == 0
    assert "project's additions on (--additions)" in capsys.readouterr().out


def test_a_local_subset_s_smaller_test_split_is_a_declared_deviation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 160 records split 100 / 50 / 500 in file order leave 10 test questions.
    records = [
        {
            "_id": f"r{index}",
            "question": f"Which record is number {index}?",
            "answer": str(index),
            "type": "bridge",
            "level": "hard",
            "supporting_facts": [["Counting", 0]],
            "context": [["Counting", [f"This is number {index}."]]],
        }
        for index in range(160)
    ]
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps(records), encoding="utf-8")
    args = ["--dry-run", "--seeds", "1", "--commit", "c0ffee0", "--out", str(tmp_path)]
    assert main("table1", [*args, "--data-hotpotqa", str(subset)], env=NO_ENV) == 0
    out = capsys.readouterr().out
    assert f"hotpotqa data: {subset.resolve()} (from --data-hotpotqa)" in out
    assert "hotpotqa: 10 test questions (paper 500)" in out
    assert "DATA:" not in out


def test_a_table_without_its_data_stops_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main("table2", ["--out", str(tmp_path)], env=NO_ENV) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("error: locomo: no data: ")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "manifests").exists()


def test_jobs_on_the_embedded_engine_stop_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each run opens its own endpoints: two at once would be two engines on the same cores.
    assert main("table1", ["--smoke", "--jobs", "2", "--out", str(tmp_path)], env=NO_ENV) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("error: --jobs 2 would start 2 embedded")
    assert "--config" in out
    assert not (tmp_path / "runs").exists() and not (tmp_path / "manifests").exists()
