"""Skill probes on the embedded engine: a 2-question `grse skills audit` of the demo's planted
library through the CLI, and one GRSE iteration with probe credit whose plan carries every
probed skill's measured effect."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.probes import ProbeSettings
from grse_graph.probes.report import AUDIT_FILE, REPORT_FILE
from grse_graph.tasks.planted import demo_planted
from grse_graph.tasks.registry import load_task
from grse_graph.training.demo import repair_config
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training

VERDICTS = {"helps", "hurts", "no effect"}


@pytest.mark.engine
def test_a_two_question_audit_of_the_planted_library_measures_every_skill(
    small_engine_url: str, tmp_path: Path
) -> None:
    planted = demo_planted()
    budget = 2 * (len(planted.skills) + 1)  # leave-one-out on both questions
    out = tmp_path / "audit"
    result = CliRunner().invoke(
        build_app(),
        [
            "skills",
            "audit",
            "--task",
            "demo",
            "--pack",
            str(planted.pack_path()),
            "--limit",
            "2",
            "--budget",
            str(budget),
            "--out",
            str(out),
            "--json",
        ],
        env={"GRSE_ACTOR_BASE_URL": small_engine_url, "GRSE_ACTOR_MAX_TOKENS": "48"},
    )
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert {(r["agent"], r["skill"]) for r in records} == {
        (s.agent, s.skill) for s in planted.skills
    }
    for record in records:
        assert record["verdict"] in VERDICTS
        assert record["questions"] in (0, 1, 2)
        if record["effect"] is not None:
            assert record["low"] <= record["effect"] <= record["high"]
    header = json.loads((out / AUDIT_FILE).read_text(encoding="utf-8"))["header"]
    assert header["design"] == "leave_one_out" and header["runs"] == budget
    # Masking a reasoner skill leaves the retriever's prompt as it was: its step is replayed.
    assert header["reused_steps"] > 0
    assert (out / REPORT_FILE).is_file()


@pytest.mark.engine
def test_probe_credit_puts_measured_effects_into_the_first_plan(
    small_engine_url: str, tmp_path: Path
) -> None:
    planted = demo_planted()
    config = repair_config(
        planted,
        batch_size=1,
        group_size=2,
        validation_size=2,
        critic_max_tokens=300,
    ).model_copy(update={"probe": ProbeSettings(design="random_masks", questions=2, budget=10)})
    llm = load_config(
        env={},
        overrides={
            **{f"{role}.base_url": small_engine_url for role in ("actor", "critic", "optimizer")},
            "actor.max_tokens": 48,
            "critic.max_tokens": 300,
            "optimizer.max_tokens": 300,
        },
    )
    run = RunFolder(tmp_path / "run")
    with ModelRoles(llm, UsageLedger()) as roles:
        deps = TrainingDeps(task=load_task("demo"), provider=roles, config=config, run=run)
        asyncio.run(run_training(deps))
    probe = run.probe_results.get("1")
    assert probe is not None and probe.result.design == "random_masks"
    assert probe.result.runs == 10
    plan = run.aggregates.get("1")
    assert plan is not None
    assert {(e.agent, e.skill_id) for e in plan.result.probe_evidence} == {
        (s.agent, s.skill) for s in planted.skills
    }
    for evidence in plan.result.probe_evidence:
        if evidence.verdict == "hurts":
            direction = plan.result.direction(evidence.agent, evidence.skill_id)
            assert direction is not None and direction.verdict == "low_utility"
