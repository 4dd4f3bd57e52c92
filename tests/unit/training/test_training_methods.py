"""The training graph behind the method seam: an added method runs a full iteration without any
change to the training package, and run folders written before the seam still load and resume."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Literal

from grse_graph.methods.base import (
    BaseCreditMethod,
    CreditInputs,
    CreditRecord,
    CreditUnit,
    ExternalMethodSettings,
    MethodSettings,
)
from grse_graph.methods.grse.method import CritiqueRecord, GrseSettings
from grse_graph.methods.plan import AggregationResult
from grse_graph.methods.registry import BUILTIN_METHODS
from grse_graph.methods.rounds import UpdateInputs
from grse_graph.skills import SkillLibrary
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.unit.training.fakes import CallLog, CountingProvider, TinyTask

FIXTURES = Path(__file__).parents[2] / "fixtures" / "training"
BEFORE_SEAM = FIXTURES / "grse-08fd31f-crashed"
"""A run folder written by the code before the seam (commit 08fd31f): `TrainConfig` flat, with
iterations=2, G=2, batch 2, |V|=2; it crashed on the 23rd model call, in iteration 2's
rollouts (the setup of tests/unit/training/test_training_graph.py's resume test)."""
EMPTY_LIBRARIES_BEFORE_SEAM = (
    "libraries/iter_0/reasoner",
    "libraries/iter_0/retriever",
    "libraries/iter_1/retriever",
)


class SilentSettings(MethodSettings):
    name: Literal["silent"] = "silent"
    rollouts: int = 1


class SilentRecord(CreditRecord):
    method: Literal["silent"] = "silent"


class SilentMethod(BaseCreditMethod[SilentSettings, SilentRecord]):
    """A method that never credits anything: one record per rollout, an empty plan."""

    name = "silent"
    title = "Silent"
    settings_type = SilentSettings
    record_type = SilentRecord

    def rollouts_per_question(self) -> int:
        return self.settings.rollouts

    async def credit(self, unit: CreditUnit, inputs: CreditInputs) -> SilentRecord:
        return SilentRecord(**self.base_fields(unit, inputs))

    async def plan(self, inputs: UpdateInputs) -> AggregationResult:
        return AggregationResult(question_ids=sorted({r.question_id for r in inputs.records}))


def _config(**changes: object) -> TrainConfig:
    base = {
        "task": "tiny",
        "iterations": 1,
        "batch_size": 2,
        "validation_size": 2,
        "concurrency": 1,
    }
    return TrainConfig.model_validate({**base, **changes})


def test_an_added_method_runs_a_full_iteration_through_the_unchanged_graph(
    tmp_path: Path,
) -> None:
    log = CallLog()
    config = _config(method={"name": "silent", "rollouts": 2})
    deps = TrainingDeps(
        task=TinyTask(),
        provider=CountingProvider(log),
        config=config,
        run=RunFolder(tmp_path),
        usage=lambda: {},
        methods={**BUILTIN_METHODS, "silent": SilentMethod},
    )
    result = asyncio.run(run_training(deps))
    run = RunFolder(tmp_path)

    stored = run.read_config()
    assert isinstance(stored.method, ExternalMethodSettings)
    assert stored.method.model_dump() == {"name": "silent", "rollouts": 2}
    assert len(run.rollouts.read()) == 2 * 2  # the method's rollouts per question
    records = run.credits(SilentRecord).read()
    assert len(records) == 4 and {r.method for r in records} == {"silent"}
    assert all(r.unit_id == f"{r.rollout_ids[0]}-credit" for r in records)
    assert log.count("critic") == 0 and log.count("optimizer") == 0
    (plan,) = run.aggregates.read()
    assert plan.result.directions == [] and len(plan.result.question_ids) == 2
    assert result.iterations_done == 1
    (gate,) = result.gates
    assert gate.decisions == []  # nothing credited, nothing to evolve, nothing to gate
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Silent training report: tiny")
    assert "## Credit" in report and "| 1 | 4 | 4 | 0 | 0 |" in report


def test_a_flat_config_json_from_before_the_seam_loads_into_the_grse_section() -> None:
    raw = json.loads((BEFORE_SEAM / "config.json").read_text())
    assert raw["method"] == "grse" and raw["group_size"] == 2  # the old, flat shape
    config = RunFolder(BEFORE_SEAM).read_config()
    assert isinstance(config.method, GrseSettings)
    assert (config.method.group_size, config.method.eps) == (2, raw["eps"])
    # A run from before token fitting keeps its fixed caps (no token budget).
    limits = config.method.payload_limits.model_dump()
    assert limits == {**raw["payload_limits"], "max_tokens": None}
    assert (config.iterations, config.batch_size, config.validation_size) == (2, 2, 2)
    rewritten = json.loads(config.model_dump_json())
    assert rewritten["method"]["name"] == "grse" and "group_size" not in rewritten
    assert TrainConfig.model_validate(rewritten) == config


def test_flat_method_knobs_given_next_to_a_section_override_it() -> None:
    config = _config(method={"name": "grse", "group_size": 3}, structured=False)
    assert isinstance(config.method, GrseSettings)
    assert (config.method.group_size, config.method.structured) == (3, False)


def test_a_run_folder_from_before_the_seam_resumes_and_matches_a_clean_run(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "old"
    shutil.copytree(BEFORE_SEAM, folder)
    # git carries no empty folder: recreate the empty libraries the old code left there.
    for library in EMPTY_LIBRARIES_BEFORE_SEAM:
        (folder / library).mkdir(parents=True, exist_ok=True)
    run = RunFolder(folder)
    config = run.read_config()
    old_critiques = run.credits(CritiqueRecord).read()
    assert [c.iteration for c in old_critiques] == [1, 1]

    resume_log = CallLog()
    deps = TrainingDeps(
        task=TinyTask(), provider=CountingProvider(resume_log), config=config, run=run
    )
    result = asyncio.run(run_training(deps, resume=True))

    clean_log = CallLog()
    clean = TrainingDeps(
        task=TinyTask(),
        provider=CountingProvider(clean_log),
        config=config,
        run=RunFolder(tmp_path / "clean"),
    )
    expected = asyncio.run(run_training(clean))
    assert result.iterations_done == 2
    # The old folder's gate predates the paired difference; the decisions themselves match.
    paired = {"difference", "standard_error"}
    assert [[d.model_dump(exclude=paired) for d in g.decisions] for g in result.gates] == [
        [d.model_dump(exclude=paired) for d in g.decisions] for g in expected.gates
    ]
    ids = [r.unit_id for r in RunFolder(folder).rollouts.read()]
    assert len(ids) == len(set(ids)) == 8
    critiques = RunFolder(folder).credits(CritiqueRecord).read()
    assert [c.iteration for c in critiques] == [1, 1, 2, 2]
    # Iteration 1's critic calls were paid before the crash, not again.
    paid = sum(c.result.critic_calls for c in old_critiques if c.result)
    assert resume_log.count("critic") == clean_log.count("critic") - paid
    assert (folder / "report.md").read_text().startswith("# GRSE training report: tiny")


def test_init_libraries_in_the_config_are_the_starting_libraries(tmp_path: Path) -> None:
    from grse_graph.skills import Skill

    folder = tmp_path / "seed" / "reasoner"
    seed = Skill(name="say-colour", description="Answer with the colour.", body="Say it.\n")
    SkillLibrary(agent="reasoner", skills=[seed]).save(folder)
    config = _config(method={"name": "silent"}, init_libraries={"reasoner": str(folder)})
    deps = TrainingDeps(
        task=TinyTask(),
        provider=CountingProvider(CallLog()),
        config=config,
        run=RunFolder(tmp_path / "run"),
        methods={**BUILTIN_METHODS, "silent": SilentMethod},
    )
    assert deps.starting_libraries()["reasoner"].names() == ["say-colour"]
    asyncio.run(run_training(deps))
    (gate,) = RunFolder(tmp_path / "run").gate.read()
    assert gate.skills_after == {"retriever": [], "reasoner": ["say-colour"]}
