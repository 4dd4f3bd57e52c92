"""The reproduction layer without models: settings and paper data, run ids, run states, the
scheduler's reuse / failure / dependency handling, cost estimates and table rendering."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from grse_graph.errors import ConfigError
from grse_graph.reproduce.cost import estimate, total
from grse_graph.reproduce.executors import Executor, RunContext
from grse_graph.reproduce.manifest import (
    Manifest,
    RunKind,
    RunSpec,
    run_state,
    runs_at_other_commits,
)
from grse_graph.reproduce.outcome import RunFailure, RunOutcome, read_failure, write_spec
from grse_graph.reproduce.paper import PAPER_TABLES, load_paper
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.scheduler import execute_runs
from grse_graph.reproduce.script import other_commit_lines
from grse_graph.reproduce.settings import default_paper_dir, load_settings
from grse_graph.reproduce.table import Cell, Column, ResultTable, Row, collect, render_markdown


def spec(**changes: object) -> RunSpec:
    values: dict[str, object] = {
        "kind": "eval",
        "task": "demo",
        "method": "empty",
        "actor": "Qwen/Qwen2.5-7B-Instruct",
        "seed": 0,
        "commit": "abc1234",
        "params": {"split": "test", "limit": 2},
    }
    values.update(changes)
    return RunSpec.model_validate(values)


# -- settings and paper numbers -------------------------------------------------------------


def test_settings_hold_table7_validation_sizes_and_table8() -> None:
    settings = load_settings()
    assert settings.table7.locomo.validation == {
        "multi-hop": 68,
        "temporal": 60,
        "open-domain": 21,
        "single-hop": 159,
    }
    t8 = settings.table8
    assert (t8.iterations, t8.group_size, t8.delta) == (5, 4, 0.02)
    assert t8.caps["actor"] == 4096 and t8.caps["critic"] == 4000
    assert t8.schedule["locomo"].prune_every == 3 and t8.schedule["hotpotqa"].prune_every == 2
    # Not in the paper's text: stored as missing, never invented.
    assert t8.batch_size["hotpotqa"] is None and settings.batch_size("locomo", "temporal") == 24
    assert settings.batch_size("locomo", None) == 32
    # Where the text gives none, the runs take the package's choice, which says why.
    assert settings.run_batch_size("hotpotqa", None) == settings.chosen("batch_size.hotpotqa")
    assert settings.library_limit("hotpotqa") == 4 and settings.validation_repeats() == 1
    assert settings.training_top_k("google/gemma-4-31B-it") == (64, "gemma")
    assert settings.training_top_k("qwen2.5-coder-0.5b") == (20, "qwen")
    assert settings.training_top_k("smollm2-135m") == (20, None)


def test_a_value_neither_in_the_text_nor_among_the_choices_is_one_config_error(
    tmp_path: Path,
) -> None:
    shutil.copytree(default_paper_dir(), tmp_path / "paper")
    path = tmp_path / "paper" / "settings.json"
    data = json.loads(path.read_text())
    del data["choices"]["library_limit.hotpotqa"]
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"library_limit\.hotpotqa is not in the paper.s text"):
        load_settings(tmp_path / "paper").library_limit("hotpotqa")
    data["table8"]["caps"].pop("refine")
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="caps lacks refine"):
        load_settings(tmp_path / "paper")


def test_every_paper_table_file_loads_and_missing_numbers_stay_missing() -> None:
    for name in PAPER_TABLES:
        paper = load_paper(name)
        assert paper.table == name
    assert load_paper("table1").value("GRSE", "f1") is None
    assert load_paper("table5").value("separation", "GRSE:u1") == 0.31


def test_a_missing_paper_file_is_one_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"table1\.json"):
        load_paper("table1", tmp_path)
    with pytest.raises(ConfigError, match=r"settings\.json"):
        load_settings(tmp_path)


# -- run ids and states ------------------------------------------------------------------


def test_run_id_is_stable_and_names_its_identity() -> None:
    a, b = spec(), spec()
    assert a.run_id == b.run_id
    assert a.run_id.startswith("demo-all-empty-default-qwen-qwen2.5-7b-instruct-s0-abc1234-")


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 1},
        {"commit": "def5678"},
        {"category": "temporal"},
        {"variant": "g1"},
        {"actor": "other"},
        {"method": "io", "kind": "baseline"},
        {"params": {"split": "test", "limit": 3}},
    ],
)
def test_any_identity_or_setting_change_gives_another_id(change: dict[str, object]) -> None:
    assert spec(**change).run_id != spec().run_id


def test_run_state_follows_the_folder(tmp_path: Path) -> None:
    s = spec()
    assert run_state(s, tmp_path) == "new"
    folder = s.folder(tmp_path)
    (folder / "eval").mkdir(parents=True)
    (folder / "eval" / "predictions.jsonl").write_text("{}\n")
    assert run_state(s, tmp_path) == "unfinished"
    (folder / "failure.json").write_text(RunFailure(run_id=s.run_id, error="x").model_dump_json())
    assert run_state(s, tmp_path) == "failed"
    (folder / "outcome.json").write_text(
        RunOutcome(run_id=s.run_id, kind="eval", wall_s=1.0).model_dump_json()
    )
    assert run_state(s, tmp_path) == "finished"


def test_manifest_lists_each_run_once_with_its_folder(tmp_path: Path) -> None:
    s = spec()
    path = Manifest(table="t", runs=[s, s, spec(seed=1)]).write(tmp_path)
    text = path.read_text()
    assert text.count('"id"') == 2 and str(s.folder(tmp_path)) in text


# -- the scheduler -----------------------------------------------------------------------


class Recorder:
    """An executor that records what it made; `fail` run ids raise."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.made: list[str] = []
        self.fail = fail or set()

    def __call__(
        self, spec: RunSpec, folder: Path, ctx: RunContext, needed: Mapping[str, RunOutcome]
    ) -> RunOutcome:
        self.made.append(spec.run_id)
        assert set(needed) == set(spec.needs)
        if spec.run_id in self.fail:
            raise RuntimeError("endpoint down\nsecond line")
        return RunOutcome(run_id=spec.run_id, kind=spec.kind, wall_s=0.5)


def _contexts() -> dict[str, RunContext]:
    from rich.console import Console

    from grse_graph.llm import load_config

    return {"Qwen/Qwen2.5-7B-Instruct": RunContext(load_config(env={}), {}, Console())}


def test_finished_runs_are_reused_and_dependencies_run_first(tmp_path: Path) -> None:
    first = spec()
    second = spec(kind="train", method="grse", params={"config": {}}, needs=(first.run_id,))
    recorder = Recorder()
    executors: dict[RunKind, Executor] = {"eval": recorder, "train": recorder}
    results = execute_runs(
        [second, first], tmp_path, _contexts(), jobs=2, say=lambda _: None, executors=executors
    )
    assert recorder.made == [first.run_id, second.run_id]
    assert all(isinstance(r, RunOutcome) for r in results.values())
    again = Recorder()
    execute_runs(
        [first, second],
        tmp_path,
        _contexts(),
        say=lambda _: None,
        executors={"eval": again, "train": again},
    )
    assert again.made == []  # both finished: read back, not made again


def test_a_failed_run_is_recorded_and_fails_the_runs_that_need_it(tmp_path: Path) -> None:
    first = spec()
    second = spec(kind="train", method="grse", params={"config": {}}, needs=(first.run_id,))
    recorder = Recorder(fail={first.run_id})
    results = execute_runs(
        [first, second],
        tmp_path,
        _contexts(),
        say=lambda _: None,
        executors={"eval": recorder, "train": recorder},
    )
    failure = results[first.run_id]
    assert isinstance(failure, RunFailure) and failure.error == "RuntimeError: endpoint down"
    assert read_failure(first.folder(tmp_path)).error == failure.error
    dependent = results[second.run_id]
    assert isinstance(dependent, RunFailure) and first.run_id in dependent.error
    assert recorder.made == [first.run_id]
    # The next invocation resumes the failed run; a success replaces its failure.json.
    retry = Recorder()
    execute_runs(
        [first, second],
        tmp_path,
        _contexts(),
        say=lambda _: None,
        executors={"eval": retry, "train": retry},
    )
    assert retry.made == [first.run_id, second.run_id]
    assert run_state(first, tmp_path) == "finished"
    assert not (first.folder(tmp_path) / "failure.json").exists()


# -- cost estimates ----------------------------------------------------------------------


def test_estimates_scale_with_questions_and_sum_per_role() -> None:
    settings = load_settings()
    small = estimate(spec(), settings, test_questions=24)
    large = estimate(spec(params={"split": "test", "limit": 4}), settings, test_questions=24)
    assert small["actor"].calls * 2 == large["actor"].calls
    assert small["critic"].calls == 0
    cot_sc = estimate(spec(kind="baseline", method="cot-sc"), settings, test_questions=24)
    assert cot_sc["actor"].calls == 2 * settings.table8.baselines.cot_sc_samples
    refine = estimate(spec(kind="baseline", method="self-refine"), settings, test_questions=24)
    assert refine["actor"].calls == 2 * (1 + 2 * settings.table8.baselines.self_refine_rounds)
    summed = total([small, cot_sc])
    assert summed["actor"].calls == small["actor"].calls + cot_sc["actor"].calls


# -- cells and tables --------------------------------------------------------------------


def test_a_cell_shows_mean_and_sample_sd_over_seeds() -> None:
    cell = Cell(values=[40.0, 44.0, 48.0], paper=45.2)
    assert cell.ours() == "44.0 ± 4.0 (n=3)"
    assert cell.paper_text() == "45.2"


def test_a_cell_without_values_is_failed_never_zero() -> None:
    outcome = RunOutcome(run_id="r1", kind="eval", wall_s=1.0)  # no evaluation at all
    cell = collect([outcome, RunFailure(run_id="r2", error="boom")], lambda o: None)
    assert cell.failed and cell.ours().startswith("FAILED (run r1 did not measure this")
    assert "0.0" not in cell.ours()
    partial = collect(
        [RunOutcome(run_id="r1", kind="eval", wall_s=1.0), RunFailure(run_id="r2", error="boom")],
        lambda o: 50.0,
    )
    assert partial.ours() == "50.0 (n=1, 1 failed)"
    assert collect([], lambda o: 1.0).failed


def test_markdown_puts_the_paper_beside_ours_and_counts_failed_cells() -> None:
    table = ResultTable(
        table="tableX",
        title="Table X",
        header=["SMOKE SIZE: 2 test questions"],
        columns=[Column(key="f1", label="F1")],
        rows=[
            Row(label="GRSE", cells={"f1": Cell(values=[50.0, 52.0], paper=55.0)}),
            Row(label="IO", cells={"f1": Cell(failures=["run r: endpoint down"])}),
        ],
        paper_where="test data",
    )
    text = render_markdown(table)
    assert "| row | F1 (ours) | F1 (paper) |" in text
    assert "| GRSE | 51.0 ± 1.4 (n=2) | 55 |" in text
    assert "| IO | FAILED (run r: endpoint down) | n/a |" in text
    assert "Cells marked FAILED: 1." in text and "- SMOKE SIZE: 2 test questions" in text
    assert table.failed_cells() == [("IO", "f1")]


def test_a_paper_column_filled_by_another_actor_names_it_above_our_values() -> None:
    columns = [
        Column(key="f1", label="Qwen3.8-27B", actor="embedded-small"),
        Column(key="em", label="EM (embedded-small)", paper=False),
    ]
    table = ResultTable(
        table="tableX",
        title="Table X",
        header=[],
        columns=columns,
        rows=[Row(label="GRSE", cells={"f1": Cell(values=[9.5]), "em": Cell(values=[0.0])})],
        paper_where="test data",
    )
    head = render_markdown(table).splitlines()[5]
    assert head == (
        "| row | Qwen3.8-27B (ours, embedded-small) | Qwen3.8-27B (paper) | EM (embedded-small) |"
    )


def test_every_table_has_a_script_in_evals() -> None:
    evals = Path(__file__).resolve().parents[3] / "evals"
    for table in TABLES.values():
        script = evals / table.script
        assert script.exists(), script
        assert f'main("{table.name}")' in script.read_text()


def test_jobs_run_independent_runs_side_by_side(tmp_path: Path) -> None:
    barrier = threading.Barrier(2, timeout=10)

    class Together(Recorder):
        def __call__(
            self, spec: RunSpec, folder: Path, ctx: RunContext, needed: Mapping[str, RunOutcome]
        ) -> RunOutcome:
            barrier.wait()  # both runs must be in flight at once, or this times out
            return super().__call__(spec, folder, ctx, needed)

    together = Together()
    results = execute_runs(
        [spec(seed=0), spec(seed=1)],
        tmp_path,
        _contexts(),
        jobs=2,
        say=lambda _: None,
        executors={"eval": together},
    )
    assert sorted(together.made) == sorted(results)
    assert all(isinstance(r, RunOutcome) for r in results.values())


def test_one_job_says_running_only_for_the_run_in_flight(tmp_path: Path) -> None:
    said: list[str] = []
    first, second = spec(seed=0), spec(seed=1)
    recorder = Recorder()
    execute_runs(
        [first, second], tmp_path, _contexts(), say=said.append, executors={"eval": recorder}
    )
    assert [line.split()[0] for line in said] == ["running", "finished", "running", "finished"]


def test_runs_of_the_same_work_at_another_commit_are_named_with_the_flag(tmp_path: Path) -> None:
    empty = spec(commit="aaaaaaa")
    trained = spec(kind="train", method="grse", commit="aaaaaaa", needs=(empty.run_id,))
    trained = trained.model_copy(update={"params": {"start_test_from": empty.run_id}})
    for earlier in (empty, trained):
        write_spec(earlier, earlier.folder(tmp_path))
    (tmp_path / "runs" / "not-a-run").mkdir()  # no spec.json: passed over
    now = [
        spec(commit="bbbbbbb"),
        spec(
            kind="train", method="grse", commit="bbbbbbb", needs=(spec(commit="bbbbbbb").run_id,)
        ).model_copy(update={"params": {"start_test_from": spec(commit="bbbbbbb").run_id}}),
        spec(commit="bbbbbbb", seed=7),  # other work: not matched
    ]
    assert runs_at_other_commits(now, tmp_path) == {
        "aaaaaaa": sorted([empty.run_id, trained.run_id])
    }
    (line,) = other_commit_lines(now, tmp_path)
    assert line.startswith("note: 2 of these runs exist at commit aaaaaaa")
    assert line.endswith("pass --commit aaaaaaa to reuse or resume them instead of starting over")
    assert other_commit_lines([empty, trained], tmp_path) == []  # the same commit: reused


def test_a_run_needing_one_outside_the_manifest_is_refused(tmp_path: Path) -> None:
    orphan = spec(needs=("missing-run",))
    with pytest.raises(ValueError, match="missing-run"):
        execute_runs([orphan], tmp_path, _contexts(), say=lambda _: None)
