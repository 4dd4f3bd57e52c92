"""Every table's plan and build without models: the dry run of each script (no data needed),
shared run ids between tables, and tables built from constructed outcomes with mean ± SD over
seeds, the paper's numbers beside ours and FAILED cells for failed runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.evaluation.records import EvalSummary, GroupSummary
from grse_graph.llm import load_config
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.paper import PaperTable, load_paper
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import main
from grse_graph.reproduce.settings import load_settings
from grse_graph.reproduce.table import render_markdown
from grse_graph.reproduce.tables import t1_hotpotqa, t2_locomo
from grse_graph.reproduce.tables.base import Result
from grse_graph.reproduce.tables.t45_repair import _skill_cells
from grse_graph.training.demo import REPAIR_SETTINGS
from grse_graph.training.repair import PlantedSkillOutcome

NO_DATA = ["--data-hotpotqa", "/nonexistent/h.json", "--data-locomo", "/nonexistent/l.json"]


def context(tmp_path: Path, table: str, seeds: int = 3, smoke: bool = False) -> TableContext:
    names = TABLES[table].papers
    return TableContext(
        settings=load_settings(),
        papers={name: load_paper(name) for name in names},
        actors=[Actor("qwen-7b", load_config(env={}))],
        seeds=list(range(seeds)),
        smoke=smoke,
        limit=None,
        commit="c0ffee0",
        data={"hotpotqa": "/d/h.json", "locomo": "/d/l.json", "demo": None},
        root=tmp_path,
        console=Console(quiet=True),
    )


@pytest.mark.parametrize("table", list(TABLES))
def test_every_table_dry_runs_without_data_or_models(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--dry-run", "--smoke", "--commit", "c0ffee0", "--out", str(tmp_path), *NO_DATA]
    assert main(table, args) == 0
    out = capsys.readouterr().out
    assert f"dry run of {table}" in out and "SMOKE SIZE" in out
    assert "runs: " in out and "estimated actor:" in out
    assert not (tmp_path / "runs").exists()


def test_grse_reproduce_calls_the_same_script(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_app(),
        ["reproduce", "table11", "--dry-run", "--smoke", "--out", str(tmp_path), *NO_DATA],
    )
    assert result.exit_code == 0, result.output
    assert "dry run of table11" in result.output
    unknown = CliRunner().invoke(build_app(), ["reproduce", "table7"])
    assert unknown.exit_code == 1 and "unknown table 'table7'" in unknown.output


def test_tables_that_read_other_tables_runs_share_their_ids(tmp_path: Path) -> None:
    ctx = {name: context(tmp_path, name) for name in TABLES}
    t1 = {s.run_id for s in TABLES["table1"].plan(ctx["table1"])}
    t2 = {s.run_id for s in TABLES["table2"].plan(ctx["table2"])}
    for reader in ("table3", "table9", "table11"):
        trains = {s.run_id for s in TABLES[reader].plan(ctx[reader]) if s.kind == "train"}
        hotpot = {r for r in trains if r.startswith("hotpotqa-")}
        assert hotpot and hotpot <= t1, reader
    t6 = {s.run_id for s in TABLES["table6"].plan(ctx["table6"]) if s.kind == "train"}
    assert t6 <= t1 | t2 and any(r.startswith("locomo-multi-hop-") for r in t6)


def _summary(f1: float, em: float, out: str = "/x") -> EvalSummary:
    group = GroupSummary(count=4, failed=0, reward=f1, metrics={"f1": f1, "em": em}, states={})
    return EvalSummary(
        task="hotpotqa",
        split="test",
        method="team",
        questions=4,
        finished=4,
        failed=0,
        overall=group,
        out_dir=out,
    )


def test_table1_shows_mean_sd_over_seeds_paper_values_and_failed_rows(tmp_path: Path) -> None:
    ctx = context(tmp_path, "table1")
    paper = PaperTable(
        table="table1",
        caption="c",
        available=True,
        where="test numbers",
        values={"GRSE": {"f1": 61.5, "em": 48.0}},
    )
    ctx = TableContext(**{**ctx.__dict__, "papers": {"table1": paper}})
    layout = t1_hotpotqa.layout(ctx)
    results: dict[str, Result] = {}
    for seed, spec in enumerate(t1_hotpotqa.trained_runs(ctx, ctx.actors[0], "GRSE")):
        results[spec.run_id] = RunOutcome(
            run_id=spec.run_id, kind="train", wall_s=1.0, summary=_summary(0.5 + 0.1 * seed, 0.4)
        )
    for spec in layout["IO"]["qwen-7b"]:
        results[spec.run_id] = RunFailure(run_id=spec.run_id, error="GrseError: endpoint down")
    (table,) = TABLES["table1"].build(ctx, results)
    text = render_markdown(table)
    assert "| GRSE | 60.0 ± 10.0 (n=3) | 61.5 | 40.0 ± 0.0 (n=3) | 48 |" in text
    io_row = next(line for line in text.splitlines() if line.startswith("| IO |"))
    assert io_row.count("FAILED") == 2 and "endpoint down" in io_row
    # Runs never made (CoT here) are failed cells as well, never zeros.
    cot_row = next(line for line in text.splitlines() if line.startswith("| CoT |"))
    assert "FAILED" in cot_row and "not run" in cot_row
    assert ("IO", "qwen-7b:f1") in table.failed_cells()
    assert table.header[0] == "commit c0ffee0; seeds 0, 1, 2"


def test_table2_average_needs_every_category_of_a_seed(tmp_path: Path) -> None:
    ctx = context(tmp_path, "table2", seeds=1)
    results: dict[str, Result] = {}
    for category in t2_locomo.CATEGORIES:
        for spec in t2_locomo.trained_runs(ctx, ctx.actors[0], "GRSE", category):
            group = GroupSummary(
                count=2, failed=0, reward=0.3, metrics={"f1": 0.2, "bleu": 0.1}, states={}
            )
            summary = EvalSummary(
                task="locomo",
                split="test",
                method="team",
                questions=2,
                finished=2,
                failed=0,
                overall=group,
                per_category={category: group},
            )
            results[spec.run_id] = RunOutcome(
                run_id=spec.run_id, kind="train", wall_s=1.0, summary=summary
            )
    (table,) = TABLES["table2"].build(ctx, results)
    grse = next(row for row in table.rows if row.label == "GRSE")
    assert grse.cells["qwen-7b|avg:f1"].ours() == "20.0"
    assert grse.cells["qwen-7b|temporal:bleu"].ours() == "10.0"
    masks = next(row for row in table.rows if row.label == "MASkills")
    assert masks.cells["qwen-7b|avg:f1"].failed


def test_paper_mode_is_stated_and_makes_its_own_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--dry-run", "--smoke", "--commit", "c0ffee0", "--out", str(tmp_path), *NO_DATA]
    assert main("table4_5", args) == 0
    project = capsys.readouterr().out
    assert main("table4_5", [*args, "--paper-mode"]) == 0
    paper = capsys.readouterr().out
    assert "mode of grse runs: project (additions on: memorisation_check" in project
    assert "mode of grse runs: paper (the project's additions off)" in paper

    def train_ids(out: str) -> set[str]:
        return {line.split()[0] for line in out.splitlines() if "[train]" in line}

    assert train_ids(project) and not train_ids(project) & train_ids(paper)


def test_machine_sized_training_is_printed_as_deviations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sizes = ["--iterations", "2", "--batch-size", "4", "--validation-size", "10"]
    args = ["--dry-run", "--seeds", "1", "--limit", "50", "--out", str(tmp_path), *NO_DATA]
    assert main("table10", [*args, *sizes, "--group-size", "3"]) == 0
    out = capsys.readouterr().out
    assert "locomo grse: 2 iteration(s) (paper T = 5)" in out
    assert "locomo grse: 4 questions per iteration (paper 32)" in out
    assert "locomo grse: validation on 10 questions (paper: the whole validation split)" in out
    assert "locomo grse: G = 3 (paper G = 4)" in out
    assert "1 seed(s) (paper: 3)" in out


def test_probe_credit_is_a_deviation_with_its_design_and_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--dry-run", "--seeds", "1", "--out", str(tmp_path), *NO_DATA]
    assert main("table4_5", args) == 0
    out = capsys.readouterr().out
    probe = REPAIR_SETTINGS["probe"]
    assert (
        "probe credit on (the package's addition, not the paper's method): "
        f"{probe['design']} over {probe['questions']} {probe['split']} questions, "
        f"{probe['confidence']:.0%} intervals"
    ) in out


def test_another_cap_or_model_makes_another_run(tmp_path: Path) -> None:
    ctx = context(tmp_path, "table1", seeds=1)
    base = {s.run_id for s in TABLES["table1"].plan(ctx)}
    capped = TableContext(
        **{
            **ctx.__dict__,
            "actors": [Actor("qwen-7b", load_config(env={}, overrides={"actor.max_tokens": 64}))],
        }
    )
    assert not base & {s.run_id for s in TABLES["table1"].plan(capped)}


def test_table5_counts_signs_only_over_the_runs_that_credited_the_skill() -> None:
    def outcome(u1: float | None, fate: str) -> RunOutcome:
        planted = PlantedSkillOutcome.model_validate(
            {"agent": "reasoner", "skill": "s", "kind": "harmful", "u1": u1, "fate": fate}
        )
        return RunOutcome.model_validate(
            {"run_id": f"r-{u1}", "kind": "train", "wall_s": 1.0, "planted": [planted]}
        )

    silent = _skill_cells([outcome(None, "kept")], "reasoner", "s")
    assert silent["fate"].text == "kept; no sign"
    mixed = _skill_cells([outcome(None, "kept"), outcome(-0.4, "pruned")], "reasoner", "s")
    assert mixed["fate"].text == "kept, pruned; sign right 1/1"
