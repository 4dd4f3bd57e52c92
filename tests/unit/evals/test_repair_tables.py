"""Tables 4 and 5 without models: the registry of repair designs (the paper's, the demo's),
the runs each plans, the tables built from constructed outcomes with the paper's rows and
columns, and the header rule that a size whose helpful-alone and perturbed libraries do not
differ cannot test repair."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from grse_graph.errors import GrseError
from grse_graph.evaluation.records import EvalSummary, GroupSummary, PredictionRecord
from grse_graph.evaluation.store import EvalFolder
from grse_graph.llm import load_config
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.paper import load_paper
from grse_graph.reproduce.settings import load_settings
from grse_graph.reproduce.tables import t45_repair as t45
from grse_graph.reproduce.tables.base import Result
from grse_graph.reproduce.tables.t45_designs import REPAIR_DESIGNS, design_of
from grse_graph.tasks.planted import demo_planted, locomo_planted
from grse_graph.training.config import TrainConfig
from grse_graph.training.repair import Fate, PlantedSkillOutcome

PAPER_ROWS = ["Perturbed library", "Helpful skills alone", "MASkills", "GRSE"]
"""Table 4's rows (grse.txt:236-240: the corrupt library, its helpful skills alone, and the
two methods' final libraries)."""
PAPER_COLUMNS = ["f1", "bleu", "delta_f1", "abstention"]
"""Table 4's columns (grse.txt:238: F1, BLEU, ΔF1, Abst.)."""


def context(tmp_path: Path, **changes: object) -> TableContext:
    ctx = TableContext(
        settings=load_settings(),
        papers={name: load_paper(name) for name in ("table4", "table5")},
        actors=[Actor("qwen-7b", load_config(env={}))],
        seeds=[0],
        smoke=False,
        limit=None,
        commit="c0ffee0",
        data={"locomo": "/d/l.json", "demo": None},
        root=tmp_path,
        paper_mode=True,
        console=Console(quiet=True),
    )
    return replace(ctx, **changes)  # type: ignore[arg-type]


def config_of(spec_params: dict[str, object]) -> TrainConfig:
    return TrainConfig.model_validate(spec_params["config"])


# ----- the design registry -----------------------------------------------------------------


def test_the_paper_design_is_the_default_and_the_demo_is_named(tmp_path: Path) -> None:
    assert set(REPAIR_DESIGNS) == {"paper", "demo"}
    paper = design_of(context(tmp_path))
    assert paper.name == "paper" and (paper.task, paper.category) == ("locomo", "single-hop")
    assert paper.planted().source == locomo_planted().source and paper.paper_numbers
    demo = design_of(context(tmp_path, design="demo"))
    assert (demo.task, demo.category) == ("demo", None)
    assert demo.planted().source == demo_planted().source and not demo.paper_numbers
    with pytest.raises(GrseError, match="unknown repair design") as caught:
        design_of(context(tmp_path, design="hotpotqa"))
    assert "\n" not in str(caught.value) and "paper, demo" in str(caught.value)


def test_paper_design_plans_the_papers_runs_with_app_c_settings(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    runs = t45.plan(ctx)
    evals = [s for s in runs if s.kind == "eval"]
    trains = {s.method: s for s in runs if s.kind == "train"}
    assert [(s.task, s.category, s.variant) for s in evals] == [
        ("locomo", "single-hop", "default"),
        ("locomo", "single-hop", "helpful-alone"),
    ]
    assert evals[1].params["planted_kinds"] == ["helpful"]
    assert set(trains) == {"grse", "maskills"}  # paper mode: no probe row
    folders = locomo_planted().library_folders()
    for spec in trains.values():
        config = config_of(spec.params)
        # App. C (grse.txt:405): T = 5, 24 training questions per iteration, δ = 0.02, L = 4.
        assert (config.iterations, config.batch_size, config.delta) == (5, 24, 0.02)
        assert config.library_limit == 4 and config.category == "single-hop"
        assert config.init_libraries == folders and config.paper_mode and config.probe is None
        assert spec.needs == (evals[0].run_id,)


def test_the_paper_designs_sizes_come_from_the_settings(tmp_path: Path) -> None:
    settings = load_settings()
    table8 = settings.table8.model_copy(update={"iterations": 7, "delta": 0.05})
    ctx = context(tmp_path, settings=settings.model_copy(update={"table8": table8}))
    config = config_of(next(s for s in t45.plan(ctx) if s.method == "grse").params)
    assert (config.iterations, config.delta) == (7, 0.05)
    sized = context(tmp_path, train_overrides={"iterations": 3, "batch_size": 6})
    config = config_of(next(s for s in t45.plan(sized) if s.method == "grse").params)
    assert (config.iterations, config.batch_size) == (3, 6)


def test_probe_credit_is_its_own_row_only_with_the_additions(tmp_path: Path) -> None:
    ctx = context(tmp_path, paper_mode=False)
    assert t45.method_labels(ctx) == ["MASkills", "GRSE", "GRSE + probe (project addition)"]
    trains = [s for s in t45.plan(ctx) if s.kind == "train"]
    probed = [s for s in trains if config_of(s.params).probe is not None]
    assert [s.variant for s in probed] == ["probe-planted"]
    assert config_of(probed[0].params).probe.design == "leave_one_out"  # type: ignore[union-attr]
    assert t45.PROBE_ROW not in t45.method_labels(context(tmp_path))


def test_demo_design_keeps_the_demos_repair(tmp_path: Path) -> None:
    ctx = context(tmp_path, design="demo")
    runs = t45.plan(ctx)
    assert {s.task for s in runs} == {"demo"} and len(runs) == 4
    config = config_of(next(s for s in runs if s.method == "grse").params)
    assert config.iterations == 1 and config.init_libraries == demo_planted().library_folders()


@pytest.mark.parametrize("paper_mode", [True, False])
def test_each_design_trains_with_the_tool_protocol_its_evaluations_use(
    tmp_path: Path, paper_mode: bool
) -> None:
    # The training runs test their starting libraries in the evaluation runs' folders; a team
    # that called tools another way stopped the demo design's MASkills and GRSE rows there.
    for design in ("paper", "demo"):
        runs = t45.plan(context(tmp_path, design=design, paper_mode=paper_mode))
        evaluations = {s.params["tool_protocol"] for s in runs if s.kind == "eval"}
        trainings = {config_of(s.params).tool_protocol for s in runs if s.kind == "train"}
        assert evaluations == trainings == {"text" if paper_mode else "function"}, design


def test_a_planted_file_for_another_task_is_one_line(tmp_path: Path) -> None:
    ctx = context(tmp_path, planted=demo_planted().source)
    with pytest.raises(GrseError, match="design 'paper' runs 'locomo'"):
        t45.plan(ctx)
    assert t45.plan(replace(ctx, design="demo"))


# ----- the tables ----------------------------------------------------------------------------


def summary(f1: float, bleu: float, declined: float, out: Path | str = "/x") -> EvalSummary:
    group = GroupSummary(
        count=4,
        failed=0,
        reward=f1,
        metrics={"f1": f1, "bleu": bleu},
        states={"declined": declined, "wrong": 0.0, "correct": 1.0 - declined},
    )
    return EvalSummary(
        task="locomo",
        split="test",
        method="team",
        questions=4,
        finished=4,
        failed=0,
        overall=group,
        out_dir=str(out),
    )


def credited(skill: str, u1: float | None, fate: Fate = "kept", at: int | None = None) -> dict:
    entry = next(e for e in locomo_planted().skills if e.skill == skill)
    return PlantedSkillOutcome(
        agent=entry.agent, skill=skill, kind=entry.kind, u1=u1, fate=fate, fate_iteration=at
    ).model_dump()


def results(ctx: TableContext) -> dict[str, Result]:
    actor = ctx.actors[0]
    start = summary(0.40, 0.30, 0.10)
    found: dict[str, Result] = {
        t45.planted_eval(ctx, actor).run_id: RunOutcome(
            run_id="p", kind="eval", wall_s=1.0, summary=start
        ),
        t45.helpful_eval(ctx, actor).run_id: RunOutcome(
            run_id="h", kind="eval", wall_s=1.0, summary=summary(0.50, 0.35, 0.05)
        ),
    }
    grse = [
        credited("multi-hop-context-expansion", 0.18, "merged", 2),
        credited("focused-latest-session-retrieval", -0.12, "merged", 2),
        credited("equation-solving", None),
        credited("answer-fidelity", 0.09, "refined", 1),
        credited("complete-sentence", -0.22, "refined", 2),
        credited("verbatim-evidence-guard", -0.19, "pruned", 3),
    ]
    (spec,) = t45.method_runs(ctx, actor, "GRSE")
    found[spec.run_id] = RunOutcome.model_validate(
        {
            "run_id": spec.run_id,
            "kind": "train",
            "wall_s": 1.0,
            "summary": summary(0.52, 0.36, 0.04).model_dump(),
            "start_summary": start.model_dump(),
            "planted": grse,
        }
    )
    (spec,) = t45.method_runs(ctx, actor, "MASkills")
    found[spec.run_id] = RunFailure(run_id=spec.run_id, error="GrseError: endpoint down")
    return found


def test_table4_has_the_papers_rows_and_columns(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    table4, _ = t45.tabulate(ctx, results(ctx))
    assert [c.key for c in table4.columns] == PAPER_COLUMNS
    assert [r.label for r in table4.rows] == [f"{row} [qwen-7b]" for row in PAPER_ROWS]
    assert [r.key for r in table4.rows] == PAPER_ROWS  # beside the paper's rows
    rows = {r.label.split(" [")[0]: r.cells for r in table4.rows}
    assert rows["Perturbed library"]["f1"].ours() == "40.0"
    assert rows["Perturbed library"]["abstention"].ours() == "10.0"
    assert rows["Helpful skills alone"]["delta_f1"].ours() == "10.0"
    assert rows["GRSE"]["delta_f1"].ours() == "12.0" and rows["GRSE"]["bleu"].ours() == "36.0"
    assert all(cell.failed for cell in rows["MASkills"].values())
    assert "endpoint down" in rows["MASkills"]["f1"].failures[0]
    with_probe = context(tmp_path, paper_mode=False)
    table4, _ = t45.tabulate(with_probe, results(with_probe))
    assert table4.rows[-1].label == "GRSE + probe (project addition) [qwen-7b]"
    assert table4.rows[-1].key is None  # a row of ours, not the paper's
    _, table5 = t45.tabulate(with_probe, results(with_probe))
    assert "GRSE + probe (project addition) [qwen-7b]:u1" in [c.key for c in table5.columns]


def test_table5_has_u1_and_fate_per_method_for_every_planted_skill(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    _, table5 = t45.tabulate(ctx, results(ctx))
    keys = [c.key for c in table5.columns]
    # The paper's column keys (paper/table5.json) beside the actor that stands for Qwen3.8.
    assert keys == ["skill", "kind"] + [
        f"{method}:{part}" for method in ("GRSE", "MASkills") for part in ("u1", "fate")
    ]
    assert [r.key for r in table5.rows] == [
        "Agent 1|context expansion",
        "Agent 1|latest session",
        "Agent 1|equation solving",
        "Agent 2|answer fidelity",
        "Agent 2|complete sentence",
        "Agent 2|verbatim guard",
        "correct_signs",
        "separation",
    ]
    labels = [r.label for r in table5.rows]
    assert labels == [
        "Agent 1 (retriever): context expansion",
        "Agent 1 (retriever): latest session",
        "Agent 1 (retriever): equation solving",
        "Agent 2 (reasoner): answer fidelity",
        "Agent 2 (reasoner): complete sentence",
        "Agent 2 (reasoner): verbatim guard",
        "Correct sign (of 5)",
        "ū1(help) − ū1(harm)",
    ]
    rows = {r.label.split(": ")[-1]: r.cells for r in table5.rows}
    grse = "GRSE"
    assert rows["verbatim guard"]["skill"].ours() == "verbatim-evidence-guard"
    assert rows["verbatim guard"]["kind"].ours() == "harm"
    assert rows["equation solving"]["kind"].ours() == "irr."
    assert rows["verbatim guard"][f"{grse}:u1"].ours() == "-0.19"
    assert rows["verbatim guard"][f"{grse}:fate"].ours() == "pruned@3; sign right 1/1"
    assert rows["equation solving"][f"{grse}:u1"].ours() == "silent (no credit)"
    assert rows["equation solving"][f"{grse}:fate"].ours() == "kept; no sign"
    assert rows["Correct sign (of 5)"][f"{grse}:u1"].ours() == "5"
    assert rows["ū1(help) − ū1(harm)"][f"{grse}:u1"].ours() == "0.31"  # 0.135 + 0.177
    assert rows["verbatim guard"]["MASkills:u1"].failed


def test_paper_numbers_stand_beside_ours_only_in_the_paper_design(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    table4, table5 = t45.tabulate(ctx, results(ctx))
    rows = {r.label.split(" [")[0]: r.cells for r in table4.rows}
    # grse.txt:240: GRSE 66.9 F1 against the helpful skills alone's 66.7, abstention 9.7 -> 4.6.
    assert rows["GRSE"]["f1"].paper == 66.9 and rows["Helpful skills alone"]["f1"].paper == 66.7
    assert rows["Perturbed library"]["abstention"].paper == 9.7
    assert rows["GRSE"]["abstention"].paper == 4.6
    fives = {r.label.split(": ")[-1]: r.cells for r in table5.rows}
    # Table 5 (grse.txt:251-253).
    assert fives["verbatim guard"]["GRSE:u1"].paper == -0.19
    assert fives["verbatim guard"]["GRSE:fate"].paper == "pruned@3"
    assert fives["verbatim guard"]["kind"].paper == "harm"
    assert fives["ū1(help) − ū1(harm)"]["MASkills:u1"].paper == 0.03
    demo = replace(ctx, design="demo")
    for table in t45.tabulate(demo, results(demo)):
        assert all(cell.paper is None for row in table.rows for cell in row.cells.values())


# ----- the size test -------------------------------------------------------------------------


def evaluation(folder: Path, rewards: list[float]) -> RunOutcome:
    store = EvalFolder(folder)
    folder.mkdir(parents=True)
    for number, reward in enumerate(rewards):
        store.append(
            PredictionRecord(
                id=f"q{number}", question="?", answer="a", reward=reward, metrics={"f1": reward}
            )
        )
    return RunOutcome(
        run_id=folder.name, kind="eval", wall_s=1.0, summary=summary(0.5, 0.5, 0.0, folder)
    )


def test_a_size_whose_interval_includes_zero_cannot_test_repair(tmp_path: Path) -> None:
    planted = evaluation(tmp_path / "planted", [0.0, 1.0, 0.5, 0.0])
    same = evaluation(tmp_path / "same", [0.0, 1.0, 0.5, 0.0])
    mixed = evaluation(tmp_path / "mixed", [1.0, 0.0, 0.5, 0.0])
    better = evaluation(tmp_path / "better", [0.5, 1.0, 1.0, 0.5])
    for helpful in (same, mixed):
        line = t45.repair_size_line(planted, helpful, "qwen-7b")
        assert "THIS SIZE CANNOT TEST REPAIR" in line and "includes 0" in line
    line = t45.repair_size_line(planted, better, "qwen-7b")
    assert "this size can test repair" in line and "+0.375" in line and "excludes 0" in line
    failed = RunFailure(run_id="h", error="GrseError: endpoint down")
    line = t45.repair_size_line(planted, failed, "qwen-7b")
    assert line.startswith("actor qwen-7b: cannot tell") and "endpoint down" in line


def test_the_size_test_heads_both_tables(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    actor = ctx.actors[0]
    found: dict[str, Result] = {
        t45.planted_eval(ctx, actor).run_id: evaluation(tmp_path / "p", [0.0, 1.0]),
        t45.helpful_eval(ctx, actor).run_id: evaluation(tmp_path / "h", [0.0, 1.0]),
    }
    for table in t45.tabulate(ctx, found):
        header = "\n".join(table.header)
        assert "THIS SIZE CANNOT TEST REPAIR" in header
        assert "skill bodies written by the project from App. C's descriptions" in header
        assert "Figure 4 not in the text" in header
        assert "not run in the paper's mode" in header
