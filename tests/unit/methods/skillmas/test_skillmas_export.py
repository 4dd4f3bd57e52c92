"""`grse skills export` of a SkillMAS run ships promoted (active) skills only: shadow skills of
the validation pool stay in the run folder."""

from __future__ import annotations

import asyncio
from pathlib import Path

from grse_graph.skills import SkillLibrary, import_pack
from grse_graph.training.run_export import export_run_pack
from grse_graph.training.run_folder import unpromoted_skills
from grse_graph.training.runner import run_training
from tests.unit.methods.skillmas.skillmas_fakes import Calls
from tests.unit.methods.skillmas.test_skillmas_loop import (
    METHODS,
    RunFolder,
    TrainingDeps,
    repair_deps,
)


def test_export_leaves_shadow_skills_out(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    d = repair_deps(run.path, Calls())
    method = d.config.method.model_copy(update={"pool_min_success_rate": 0.5})
    config = d.config.model_copy(update={"method": method})
    deps = TrainingDeps(task=d.task, provider=d.provider, config=config, run=d.run, methods=METHODS)
    asyncio.run(run_training(deps))
    # round 1 wrote the patch skill as shadow; round 2 promoted it (3 of 6) and wrote a shadow
    # add-guard copy of it
    one = SkillLibrary.load(run.library_dir(1, "reasoner"), agent="reasoner")
    two = SkillLibrary.load(run.library_dir(2, "reasoner"), agent="reasoner")
    assert one.names() == ["multi-hop-rl-r1"]
    assert two.names() == ["multi-hop-rl-r1", "multi-hop-rl-r1-r2"]
    assert unpromoted_skills(run.path, 2)["reasoner"] == {"multi-hop-rl-r1-r2"}
    assert unpromoted_skills(run.path, 1)["reasoner"] == {"multi-hop-rl-r1"}
    first = import_pack(export_run_pack(run.path, 1, tmp_path / "pack1"))
    assert first["reasoner"].names() == []
    latest = import_pack(export_run_pack(run.path, None, tmp_path / "pack2", bookkeeping=False))
    assert latest["reasoner"].names() == ["multi-hop-rl-r1"]
    assert set(latest) == {"retriever", "specialist-multi-hop", "reasoner"}
    start = import_pack(export_run_pack(run.path, 0, tmp_path / "pack0"))
    assert start["reasoner"].names() == []  # iteration 0: the state marks nothing
    assert unpromoted_skills(run.path, 0) == {}
