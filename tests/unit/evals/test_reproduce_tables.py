"""Every table's plan and build without models: the dry run of each script (no data needed),
shared run ids between tables, tables built from constructed outcomes with mean ± SD over
seeds, the paper's numbers beside ours and FAILED cells for failed runs; each table's rows and
columns against the paper's layout (evals/paper/<table>.json), Table 3's pooling and
contributions, and the unfilled-cell rule (not run at the smoke size and listed, or FAILED)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.evaluation.records import EvalSummary, GroupSummary, PredictionRecord
from grse_graph.evaluation.store import EvalFolder
from grse_graph.llm import load_config
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.outcome import RunFailure, RunOutcome, SkillType
from grse_graph.reproduce.paper import PaperCell, PaperTable, load_paper
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import main
from grse_graph.reproduce.settings import load_settings
from grse_graph.reproduce.table import (
    NOT_RUN_AT_SIZE,
    Cell,
    Column,
    Row,
    TableContent,
    render_markdown,
)
from grse_graph.reproduce.tables import t1_hotpotqa, t2_locomo, t9_typing
from grse_graph.reproduce.tables.base import Result, TableDef
from grse_graph.reproduce.tables.t45_repair import _skill_cells
from grse_graph.reproduce.typing_labels import UNPARSED, describe, parse_label, skill_words
from grse_graph.team.rollout import Rollout, Step
from grse_graph.training.demo import REPAIR_SETTINGS
from grse_graph.training.repair import PlantedSkillOutcome

NO_DATA = ["--data-hotpotqa", "/nonexistent/h.json", "--data-locomo", "/nonexistent/l.json"]


def context(
    tmp_path: Path,
    table: str,
    seeds: int = 3,
    smoke: bool = False,
    actors: tuple[str, ...] = ("qwen-7b",),
) -> TableContext:
    names = TABLES[table].papers
    return TableContext(
        settings=load_settings(),
        papers={name: load_paper(name) for name in names},
        actors=[Actor(label, load_config(env={})) for label in actors],
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
        locomo = trains - hotpot
        assert locomo and locomo <= t2, reader
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


def _with_cell(paper: PaperTable, row: str, column: str, cell: PaperCell) -> PaperTable:
    cells = {r: dict(c) for r, c in paper.cells.items()}
    cells[row][column] = cell
    return paper.model_copy(update={"cells": cells})


def test_table1_shows_mean_sd_over_seeds_paper_values_and_failed_rows(tmp_path: Path) -> None:
    ctx = context(tmp_path, "table1")
    paper = _with_cell(load_paper("table1"), "GRSE", "Qwen3.8:f1", PaperCell(value=61.5, line=1))
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
    assert "| GRSE | 60.0 ± 10.0 (n=3) | 61.5 | 40.0 ± 0.0 (n=3) |" in text
    io_row = next(line for line in text.splitlines() if line.startswith("| IO |"))
    assert io_row.count("FAILED") == 2 and "endpoint down" in io_row
    # Runs never made (CoT here) are failed cells as well, never zeros.
    cot_row = next(line for line in text.splitlines() if line.startswith("| CoT |"))
    assert "FAILED" in cot_row and "not run" in cot_row
    assert ("IO", "Qwen3.8:f1") in table.failed_cells()
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
    assert grse.cells["Qwen3.8|avg:f1"].ours() == "20.0"
    assert grse.cells["Qwen3.8|temporal:bleu"].ours() == "10.0"
    masks = next(row for row in table.rows if row.label == "MASkills")
    assert masks.cells["Qwen3.8|avg:f1"].failed


def test_a_category_the_few_test_questions_miss_is_not_run_at_smoke_and_fails_at_full(
    tmp_path: Path,
) -> None:
    """Table 10 pools the categories; a smoke run's one test question is multi-hop."""
    group = GroupSummary(count=1, failed=0, reward=0.3, metrics={"f1": 0.2, "bleu": 0.1}, states={})
    summary = EvalSummary(
        task="locomo",
        split="test",
        method="team",
        questions=1,
        finished=1,
        failed=0,
        overall=group,
        per_category={"multi-hop": group},
    )
    built = {}
    for smoke in (True, False):
        ctx = context(tmp_path, "table10", seeds=1, smoke=smoke)
        results: dict[str, Result] = {
            s.run_id: RunOutcome(run_id=s.run_id, kind=s.kind, wall_s=1.0, summary=summary)
            for s in TABLES["table10"].plan(ctx)
        }
        (built[smoke],) = TABLES["table10"].build(ctx, results)
    smoke_row = built[True].rows[0]
    assert smoke_row.cells["multi-hop:f1"].ours() == "20.0"
    assert smoke_row.cells["temporal:f1"].ours() == NOT_RUN_AT_SIZE
    assert smoke_row.cells["avg:f1"].ours() == NOT_RUN_AT_SIZE
    assert built[True].failed_cells() == []
    full_cell = built[False].rows[0].cells["temporal:f1"]
    assert full_cell.failed and "no temporal question" in full_cell.failures[0]


def test_paper_mode_is_the_default_and_additions_make_their_own_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--dry-run", "--smoke", "--commit", "c0ffee0", "--out", str(tmp_path), *NO_DATA]
    assert main("table4_5", args) == 0
    paper = capsys.readouterr().out
    assert main("table4_5", [*args, "--additions"]) == 0
    project = capsys.readouterr().out
    assert "mode of grse runs: project (additions on: memorisation_check" in project
    assert "mode of grse runs: paper (the project's additions off)" in paper
    assert "paper's mode: the project's additions off" in paper
    assert "project's additions on (--additions)" in project

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
    # Table 10 is one run per setting in the paper: its first seed alone, not a deviation.
    assert "one run per setting (the first seed), as in the paper" in out
    assert "seed(s) (paper:" not in out
    assert main("table10", [*args[:2], "3", *args[3:], *sizes]) == 0
    three = capsys.readouterr().out
    assert "; seeds 0\n" in three and "seed(s) (paper:" not in three
    assert three.count("[train]") == out.count("[train]") == 5


def test_probe_credit_is_a_deviation_with_its_design_and_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--dry-run", "--seeds", "1", "--out", str(tmp_path), *NO_DATA]
    # The probe row is the project's addition (--additions); the demo design's probe.
    assert main("table4_5", [*args, "--additions", "--design", "demo"]) == 0
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


# -- the paper's layout ----------------------------------------------------------------------

LAID_OUT = ("table1", "table2", "table3", "table6", "table9", "table10", "table11")
BOTH_ACTORS = ("qwen-7b", "gemma-9b")


@pytest.mark.parametrize("name", LAID_OUT)
def test_each_table_has_the_paper_s_rows_and_columns_in_its_order(
    name: str, tmp_path: Path
) -> None:
    ctx = context(tmp_path, name, actors=BOTH_ACTORS)
    (table,) = TABLES[name].build(ctx, {})
    layout = ctx.paper.layout
    ours_rows = [row.key for row in table.rows if row.key is not None]
    assert ours_rows == [r.key for r in layout.rows], name
    assert [row.label for row in table.rows if row.key is not None] == [
        r.label for r in layout.rows
    ]
    ours_columns = [c.key for c in table.columns if c.paper]
    assert ours_columns == [c.key for c in layout.columns], name
    assert [c.label for c in table.columns if c.paper] == [c.label for c in layout.columns]
    # Rows and columns of ours come after the paper's, and the header names them.
    keyed = [row.key is not None for row in table.rows]
    assert keyed == sorted(keyed, reverse=True), name
    papered = [c.paper for c in table.columns]
    assert papered == sorted(papered, reverse=True), name
    assert not any("the paper's rows not in ours" in line for line in table.header)
    assert not any("the paper's columns not in ours" in line for line in table.header)
    extra_rows = [row.label for row in table.rows if row.key is None]
    if extra_rows:
        line = next(h for h in table.header if h.startswith("rows of ours"))
        assert all(label in line for label in extra_rows)
    extra_columns = [c.label for c in table.columns if not c.paper]
    if extra_columns:
        line = next(h for h in table.header if h.startswith("columns of ours"))
        assert all(label in line for label in extra_columns)
    # Nothing ran: every cell of ours is FAILED (never a zero, never skipped at full size).
    cells = [table.cell(row, column) for row in table.rows for column in table.columns]
    assert all(cell.failed or cell.text is not None for cell in cells), name
    assert table.not_run_cells() == [] and len(table.failed_cells()) > 0


def test_one_actor_declares_the_paper_s_other_actor_missing(tmp_path: Path) -> None:
    (table,) = TABLES["table1"].build(context(tmp_path, "table1"), {})
    assert "actor qwen-7b beside the paper's Qwen3.8 actor" in table.header
    line = next(h for h in table.header if h.startswith("the paper's columns not in ours"))
    assert "Gemma-4-31B-it" in line
    (table3,) = TABLES["table3"].build(context(tmp_path, "table3"), {})
    line = next(h for h in table3.header if h.startswith("the paper's rows not in ours"))
    assert "LoCoMo, Gemma4: GRSE" in line and "Qwen3.8" not in line


# -- the unfilled-cell rule --------------------------------------------------------------------


def test_cells_not_run_at_the_smoke_size_are_listed_and_no_others(tmp_path: Path) -> None:
    ctx = context(tmp_path, "table2", seeds=1, smoke=True)
    (table,) = TABLES["table2"].build(ctx, {})
    skipped = table.not_run_cells()
    # The smoke size trains multi-hop alone: the other categories and the Avg. of the trained
    # rows are not run, and the header lists exactly those cells.
    assert skipped and {row for row, _ in skipped} == set(t2_locomo.TRAINED)
    assert not any("multi-hop" in column for _, column in skipped)
    line = table.header[-1]
    assert line.startswith(f"{NOT_RUN_AT_SIZE}: {len(skipped)} cell(s): ")
    assert "temporal F1" in line and "multi-hop" not in line
    # Every other cell without a value is a failure (nothing ran here), counted as FAILED.
    unfilled = [
        (row.label, c.key)
        for row in table.rows
        for c in table.columns
        if not table.cell(row, c).values and table.cell(row, c).text is None
    ]
    assert len(unfilled) == len(skipped) + len(table.failed_cells())
    assert f"Cells marked FAILED: {len(table.failed_cells())}." in render_markdown(table)


def _skipping_table() -> TableDef:
    def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
        columns = [Column(key="a", label="A"), Column(key="b", label="B")]
        rows = [Row(label="R", cells={"a": Cell.skipped_at_size()})]  # no cell for "b"
        return [TableContent(columns=columns, rows=rows)]

    return replace(TABLES["table1"], plan_runs=lambda ctx: [], tabulate=tabulate)


def test_a_skip_outside_the_smoke_size_and_a_missing_cell_are_failures(tmp_path: Path) -> None:
    table_def = _skipping_table()
    (smoke,) = table_def.build(context(tmp_path, "table1", smoke=True), {})
    assert smoke.not_run_cells() == [("R", "A")] and smoke.failed_cells() == [("R", "b")]
    assert any(line.startswith(NOT_RUN_AT_SIZE) for line in smoke.header)
    (full,) = table_def.build(context(tmp_path, "table1"), {})
    assert full.not_run_cells() == [] and full.failed_cells() == [("R", "a"), ("R", "b")]
    assert "outside the smoke size" in full.rows[0].cells["a"].ours()
    assert not any(line.startswith(NOT_RUN_AT_SIZE) for line in full.header)


# -- Table 3: pooling and contributions ------------------------------------------------------


def _record(qid: str, f1: float, prediction: str, retrieved: str) -> PredictionRecord:
    state = "declined" if "not mentioned" in prediction else ("correct" if f1 >= 0.5 else "wrong")
    step = Step(index=0, agent="retriever", system_prompt="", input="", output=retrieved)
    return PredictionRecord(
        id=qid,
        question="q",
        answer="a",
        prediction=prediction,
        metrics={"f1": f1},
        state=state,  # type: ignore[arg-type]
        rollout=Rollout(rollout_id=qid, question_id=qid, steps=[step]),
    )


def _folder(path: Path, records: list[PredictionRecord]) -> str:
    path.mkdir(parents=True)
    folder = EvalFolder(path)
    for record in records:
        folder.append(record)
    return str(path)


def _eval_summary(out_dir: str) -> EvalSummary:
    summary = _summary(0.0, 0.0, out_dir)
    return summary.model_copy(update={"task": "locomo"})


def test_table3_pools_categories_and_splits_delta_into_contributions(tmp_path: Path) -> None:
    settings = load_settings()
    two = settings.smoke.model_copy(update={"locomo_categories": ["multi-hop", "temporal"]})
    ctx = context(tmp_path, "table3", seeds=1, smoke=True)
    ctx = replace(ctx, settings=settings.model_copy(update={"smoke": two}))
    actor = ctx.actors[0]
    nothing = "NO_EVIDENCE"
    before = {  # iteration 0 of the GRSE runs
        "multi-hop": [
            _record("q1", 0.0, "not mentioned", nothing),
            _record("q2", 0.8, "Paris", nothing),
        ],
        "temporal": [
            _record("q3", 0.0, "1999", nothing),
            _record("q4", 0.0, "not mentioned", nothing),
        ],
    }
    after = {
        "multi-hop": [
            _record("q1", 1.0, "Luna", "[D1:2] Luna"),
            _record("q2", 0.2, "Rome", "[D2:1] Rome"),
        ],
        "temporal": [
            _record("q3", 0.6, "2001", nothing),
            _record("q4", 1.0, "May", nothing),
        ],
    }
    results: dict[str, Result] = {}
    for category in ("multi-hop", "temporal"):
        start = _folder(tmp_path / category / "start", before[category])
        final = _folder(tmp_path / category / "final", after[category])
        # MASkills's own starting test must not be read: "before" is GRSE's iteration 0.
        wrong_start = _folder(tmp_path / category / "other", after[category])
        for label, start_dir in (("GRSE", start), ("MASkills", wrong_start)):
            (spec,) = t2_locomo.trained_runs(ctx, actor, label, category)
            results[spec.run_id] = RunOutcome(
                run_id=spec.run_id,
                kind="train",
                wall_s=1.0,
                summary=_eval_summary(final),
                start_summary=_eval_summary(start_dir),
            )
    (table,) = TABLES["table3"].build(ctx, results)
    rows = {row.label: row for row in table.rows}
    for method in ("GRSE", "MASkills"):
        cells = rows[f"LoCoMo, Qwen3.8: {method}"].cells
        # Δ = (1.0 - 0.6 + 0.6 + 1.0) / 4 questions = +50.0 points of F1.
        assert cells["delta_f1"].ours() == "+50.0"
        assert cells["D->C"].ours() == "+50.0"  # q1 and q4
        assert cells["W->C"].ours() == "+15.0"  # q3
        assert cells["C->W"].ours() == "-15.0"  # q2
        moves = sum(cells[m].mean or 0.0 for m in ("D->C", "W->C", "C->W"))
        assert moves == pytest.approx(cells["delta_f1"].mean)
        assert cells["declined"].ours() == "50→0"
        assert cells["no_evidence"].ours() == "100→50"
        assert cells["dc_count"].ours() == "2 (1)"  # q4 reached without cited evidence
    # The per-category rows follow as rows of ours; the untrained ones are listed.
    multi_hop = rows["LoCoMo multi-hop, Qwen3.8: GRSE"]
    assert multi_hop.key is None and multi_hop.cells["delta_f1"].ours() == "+20.0"
    assert multi_hop.cells["D->C"].ours() == "+50.0" and multi_hop.cells["C->W"].ours() == "-30.0"
    assert multi_hop.cells["dc_count"].ours() == "1 (0)"
    not_run = next(line for line in table.header if line.startswith(NOT_RUN_AT_SIZE))
    assert "LoCoMo single-hop, Qwen3.8: GRSE (every column)" in not_run
    assert "LoCoMo temporal" not in not_run
    # HotpotQA has no retrieval step: the paper's dash; its runs did not run here: FAILED.
    hotpot = rows["HotpotQA, Qwen3.8: GRSE"].cells
    assert hotpot["delta_f1"].failed and "not run" in hotpot["delta_f1"].ours()


def test_table3_rows_fail_when_the_tests_hold_other_questions(tmp_path: Path) -> None:
    ctx = context(tmp_path, "table3", seeds=1, smoke=True)
    actor = ctx.actors[0]
    start = _folder(tmp_path / "start", [_record("q1", 0.0, "x", "")])
    final = _folder(tmp_path / "final", [_record("q9", 1.0, "y", "")])
    (spec,) = t2_locomo.trained_runs(ctx, actor, "GRSE", "multi-hop")
    results: dict[str, Result] = {
        spec.run_id: RunOutcome(
            run_id=spec.run_id,
            kind="train",
            wall_s=1.0,
            summary=_eval_summary(final),
            start_summary=_eval_summary(start),
        )
    }
    (table,) = TABLES["table3"].build(ctx, results)
    row = next(r for r in table.rows if r.label == "LoCoMo, Qwen3.8: GRSE")
    assert all(cell.failed for cell in row.cells.values())
    assert "other ones" in row.cells["declined"].failures[0]


# -- Table 9: the paper's types ----------------------------------------------------------------


def test_table9_shares_use_the_paper_s_types_and_pool_locomo_categories(tmp_path: Path) -> None:
    ctx = context(tmp_path, "table9", seeds=1)
    assert ctx.settings.typing.labels == [
        "format",
        "retrieval",
        "verification",
        "reasoning",
        "abstention",
        "generic",
    ]
    actor = ctx.actors[0]
    results: dict[str, Result] = {}
    kinds = {"multi-hop": ["retrieval", "retrieval"], "temporal": ["abstention", "unparsed"]}
    for category in t2_locomo.CATEGORIES:
        (trained,) = t2_locomo.trained_runs(ctx, actor, "GRSE", category)
        spec = t9_typing.typing_spec(ctx, actor, trained)
        types = [
            SkillType(agent="a", skill=f"s{i}", words=10 * (i + 1), label=label, reply=label)
            for i, label in enumerate(kinds.get(category, []))
        ]
        results[spec.run_id] = RunOutcome(
            run_id=spec.run_id, kind="typing", wall_s=1.0, skill_types=types
        )
    (table,) = TABLES["table9"].build(ctx, results)
    row = next(r for r in table.rows if r.key == "LoCoMo|Qwen3.8|GRSE")
    assert row.cells["n"].ours() == "4"
    assert row.cells["retrieval"].ours() == "50" and row.cells["abstention"].ours() == "25"
    assert row.cells["unparsed"].ours() == "25" and row.cells["format"].ours() == "0"
    assert row.cells["words"].ours() == "15"  # (10 + 20 + 10 + 20) / 4
    hotpot = next(r for r in table.rows if r.key == "HotpotQA|Qwen3.8|GRSE")
    assert hotpot.cells["n"].failed


def test_typing_prompt_gives_each_paper_type_and_counts_description_words() -> None:
    text = describe(["format", "abstention", "custom"])
    assert "- format: " in text and "- abstention: " in text and "- custom" in text
    assert skill_words("two words", "and three more") == 5
    assert parse_label("Type: Retrieval.", ["format", "retrieval"]) == "retrieval"
    assert parse_label("none of these", ["format"]) == UNPARSED
