"""`grse_graph.export_pack`: a `TrainResult`, a run folder or libraries in hand become a pack; a
run's skills its method holds back (SkillMAS shadow or disabled) stay out, as in
`grse skills export`; anything else is one line of the package's errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import grse_graph
from grse_graph import TrainResult, export_pack, load_pack, train
from grse_graph.errors import ConfigError, GrseError, SkillError
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.skills import export_pack as write_pack
from grse_graph.training.records import GateRecord
from grse_graph.training.run_folder import RunFolder
from tests.unit.training.fakes import CallLog, CountingProvider, TinyTask

KEPT = "kept-skill"
ON_TRIAL = "trial-skill"


def _skill(name: str) -> Skill:
    return Skill.build(
        name=name,
        description=f"Use when answering: the {name} advice.",
        body="Answer with the shortest exact span.",
        metadata={"grse-utility": "0.4"},
    )


def _gate(iteration: int, libraries: dict[str, SkillLibrary]) -> dict[str, Any]:
    return {
        "iteration": iteration,
        "base_score": 0.5,
        "validation_questions": 2,
        "validation_repeats": 1,
        "libraries_before": {},
        "libraries_after": {a: lib.content_hash() for a, lib in libraries.items()},
        "skills_after": {a: lib.names() for a, lib in libraries.items()},
        "library_paths": {a: f"libraries/iter_{iteration}/{a}" for a in libraries},
    }


def _run_with_a_skill_on_trial(root: Path, iterations: int = 1) -> tuple[Path, list[GateRecord]]:
    """A run folder whose committed iterations each hold KEPT and ON_TRIAL for the reasoner,
    ON_TRIAL marked shadow in the method state (a SkillMAS skill still in its pool); iteration
    t >= 2 adds `added-in-<t>`."""
    run = RunFolder(root)
    run.save_library(run.library_dir(0, "reasoner"), SkillLibrary.empty("reasoner"))
    gates, states = [], []
    for iteration in range(1, iterations + 1):
        added = [_skill(f"added-in-{t}") for t in range(2, iteration + 1)]
        libraries = {
            "reasoner": SkillLibrary.build("reasoner", [_skill(KEPT), _skill(ON_TRIAL), *added])
        }
        run.save_library(run.library_dir(iteration, "reasoner"), libraries["reasoner"])
        gates.append(_gate(iteration, libraries))
        status = {"reasoner": {KEPT: "active", ON_TRIAL: "shadow"}}
        states.append({"iteration": iteration, "method": "skillmas", "state": {"status": status}})
    for name, records in (("gate.jsonl", gates), ("method_state.jsonl", states)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return root, [GateRecord.model_validate(g) for g in gates]


def _result(run: Path, gates: list[GateRecord]) -> TrainResult:
    """What `train` returns for that run (its final libraries, the run folder)."""
    last = gates[-1].iteration
    return TrainResult(
        run_dir=str(run),
        iterations_done=len(gates),
        gates=gates,
        final_libraries={"reasoner": f"libraries/iter_{last}/reasoner"},
    )


def _names(pack: Path) -> dict[str, list[str]]:
    return {agent: sorted(library.names()) for agent, library in load_pack(pack).items()}


def _one_line(error: pytest.ExceptionInfo[GrseError]) -> str:
    message = str(error.value)
    assert message and "\n" not in message
    return message


def test_the_package_exports_it() -> None:
    assert "export_pack" in grse_graph.__all__
    assert grse_graph.export_pack is export_pack


@pytest.mark.parametrize("as_text", [False, True], ids=["Path", "str"])
def test_a_run_folder_ships_its_latest_iteration_without_held_back_skills(
    tmp_path: Path, as_text: bool
) -> None:
    run, _ = _run_with_a_skill_on_trial(tmp_path / "run")
    on_disk = SkillLibrary.load(run / "libraries" / "iter_1" / "reasoner", agent="reasoner")
    assert sorted(on_disk.names()) == [KEPT, ON_TRIAL]  # so only the filter can leave ON_TRIAL out

    pack = export_pack(str(run) if as_text else run, tmp_path / "pack")

    assert pack == tmp_path / "pack"
    assert _names(pack) == {"reasoner": [KEPT]}
    assert load_pack(pack)["reasoner"].skills[0].utility == 0.4  # bookkeeping kept by default
    start = export_pack(run, tmp_path / "start", iteration=0)
    assert _names(start) == {"reasoner": []}


def test_a_train_result_ships_the_iteration_it_ended_at_without_held_back_skills(
    tmp_path: Path,
) -> None:
    run, gates = _run_with_a_skill_on_trial(tmp_path / "run", iterations=2)
    # The result of a first call that ran one iteration; the folder was resumed to two since.
    result = _result(run, gates[:1])

    pack = export_pack(result, tmp_path / "pack", bookkeeping=False)

    assert _names(pack) == {"reasoner": [KEPT]}  # not iteration 2's added-in-2, nor ON_TRIAL
    assert load_pack(pack)["reasoner"].skills[0].utility is None  # grse-* stripped
    latest = export_pack(result, tmp_path / "latest", iteration=2)
    assert _names(latest) == {"reasoner": ["added-in-2", KEPT]}


def test_what_train_returns_ships_its_final_libraries(tmp_path: Path) -> None:
    config = {"iterations": 1, "batch_size": 2, "validation_size": 2, "concurrency": 1}
    config["method"] = {"name": "grse", "group_size": 2}
    result = train(
        TinyTask(), config=config, provider=CountingProvider(CallLog()), run_dir=tmp_path / "run"
    )

    pack = export_pack(result, tmp_path / "pack", bookkeeping=False)

    shipped = load_pack(pack)
    assert {a: lib.names() for a, lib in shipped.items()} == {
        a: lib.names() for a, lib in result.libraries.items()
    }
    assert shipped["reasoner"].names() == ["colour-answers"]
    assert all(skill.utility is None for lib in shipped.values() for skill in lib.skills)


def test_libraries_in_hand_ship_as_they_are(tmp_path: Path) -> None:
    library = SkillLibrary.build("reasoner", [_skill(KEPT), _skill(ON_TRIAL)])

    pack = export_pack({"reasoner": library}, tmp_path / "pack")
    stripped = export_pack({"reasoner": library}, tmp_path / "stripped", bookkeeping=False)

    assert load_pack(pack)["reasoner"].content_hash() == library.content_hash()
    assert _names(stripped) == {"reasoner": [KEPT, ON_TRIAL]}
    assert all(skill.utility is None for skill in load_pack(stripped)["reasoner"].skills)


def _not_a_folder(tmp: Path) -> object:
    (tmp / "file").write_text("x", "utf-8")
    return tmp / "file"


def _empty_folder(tmp: Path) -> object:
    (tmp / "empty").mkdir()
    return tmp / "empty"


def _a_pack(tmp: Path) -> object:
    return write_pack({"reasoner": SkillLibrary.empty("reasoner")}, tmp / "old-pack")


NOT_SHIPPABLE: dict[str, tuple[Any, dict[str, Any], str]] = {
    "a number": (lambda tmp: 3, {}, "expected a TrainResult, a training run folder or libraries"),
    "a missing path": (lambda tmp: tmp / "nosuch", {}, "is not a folder"),
    "a file": (_not_a_folder, {}, "is not a folder"),
    "an empty folder": (_empty_folder, {}, "is not a training run folder (no libraries/"),
    "a pack": (_a_pack, {}, "is not a training run folder (a skill pack"),
    "a path by agent": (
        lambda tmp: {"reasoner": tmp},
        {},
        "map agent names to SkillLibrary objects",
    ),
    "libraries with an iteration": (
        lambda tmp: {"reasoner": SkillLibrary.empty("reasoner")},
        {"iteration": 1},
        "iteration only goes with a TrainResult or run folder",
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_SHIPPABLE))
def test_anything_else_is_one_config_error_line(name: str, tmp_path: Path) -> None:
    make, options, problem = NOT_SHIPPABLE[name]
    with pytest.raises(ConfigError) as error:
        export_pack(make(tmp_path), tmp_path / "pack", **options)
    assert problem in _one_line(error)
    assert not (tmp_path / "pack").exists()


def test_a_broken_run_is_the_run_exports_one_line(tmp_path: Path) -> None:
    run, _ = _run_with_a_skill_on_trial(tmp_path / "run")
    with pytest.raises(SkillError) as error:
        export_pack(run, tmp_path / "pack", iteration=5)
    assert "no iteration 5" in _one_line(error)
