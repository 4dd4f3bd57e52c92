"""The one-call Python API: `train`, `evaluate` and `load_pack` on fake models (a fake provider,
or the fake OpenAI-compatible server through the environment's roles), and their one-line
errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import grse_graph
from grse_graph import TrainResult, evaluate, load_pack, train
from grse_graph.errors import ConfigError, GrseError, SkillError, TaskError
from grse_graph.llm import load_config
from grse_graph.methods.base import ExternalMethodSettings
from grse_graph.skills import Skill, SkillLibrary, export_pack
from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import FakeOpenAIServer
from tests.unit.training.fakes import CallLog, CountingProvider, TinyTask
from tests.unit.training.test_training_methods import SilentMethod, SilentRecord, SilentSettings

SMALL: dict[str, Any] = {
    "iterations": 1,
    "batch_size": 2,
    "validation_size": 2,
    "concurrency": 1,
    "method": {"name": "grse", "group_size": 2},
}
"""One GRSE iteration of TinyTask: the critic asks for a colour skill, the reasoner's candidate
with it answers every validation question (greedy without skills answers none)."""


def _colour_library() -> SkillLibrary:
    skill = Skill.build(
        name="colour-answers",
        description="Answer colour questions with the single colour word.",
        body="Reply with one word: the colour.",
    )
    return SkillLibrary.empty("reasoner").add(skill)


def _one_line(error: pytest.ExceptionInfo[GrseError]) -> str:
    message = str(error.value)
    assert message and "\n" not in message
    return message


def test_the_package_exports_the_api() -> None:
    assert grse_graph.train is train and grse_graph.TrainResult is TrainResult
    assert {"train", "evaluate", "load_pack", "TrainResult"} <= set(grse_graph.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        _ = grse_graph.nosuch  # type: ignore[attr-defined]


def test_train_returns_the_final_libraries_as_objects_scores_run_folder(tmp_path: Path) -> None:
    log = CallLog()
    result = train(
        TinyTask(), config=SMALL, provider=CountingProvider(log), run_dir=tmp_path / "run"
    )

    assert isinstance(result, TrainResult)
    assert Path(result.run_dir) == tmp_path / "run" and RunFolder(result.run_dir).exists()
    assert set(result.libraries) == {"retriever", "reasoner"}
    reasoner = result.libraries["reasoner"]
    assert isinstance(reasoner, SkillLibrary)
    assert [s.name for s in reasoner.skills] == ["colour-answers"]
    assert result.libraries["retriever"].skills == []
    saved = RunFolder(result.run_dir).load_library(
        result.final_libraries["reasoner"], "reasoner", 4
    )
    assert saved.content_hash() == reasoner.content_hash()
    (scores,) = result.scores
    assert (scores.iteration, scores.base) == (1, 0.0)
    assert scores.candidates == {"reasoner": 1.0} and scores.accepted == ["reasoner"]
    assert result.usage == {}  # a fake provider keeps no usage ledger
    assert "libraries" not in result.model_dump()  # on disk at final_libraries already
    assert log.count("critic") > 0


def test_train_without_a_provider_runs_the_session_on_the_roles_and_reports_usage(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer() as server:
        roles = load_config(env=server.env())  # every role remote: no engine is started
        result = train(
            "demo",
            config={"iterations": 1, "batch_size": 1, "validation_size": 1, "group_size": 2},
            llm=roles,
            run_dir=tmp_path / "run",
        )
        served = server.counts()
    assert result.iterations_done == 1
    calls = {role: usage["calls"] for role, usage in result.usage["roles"].items()}
    assert calls["actor"] == served["actor"] > 0 and calls["critic"] == served["critic"] > 0
    assert RunFolder(result.run_dir).read_usage()["roles"]["actor"]["calls"] == calls["actor"]
    stored = RunFolder(result.run_dir).read_config()
    # The mapping is completed as `grse train` completes its table: the demo's protocol values.
    assert (stored.task, stored.method.name, stored.library_limit) == ("demo", "grse", 4)


def test_a_method_of_your_own_runs_through_the_same_train_call(tmp_path: Path) -> None:
    log = CallLog()
    result = train(
        TinyTask(),
        method=SilentSettings(rollouts=2),
        methods={"silent": SilentMethod},
        config={"iterations": 1, "batch_size": 2, "validation_size": 2, "concurrency": 1},
        provider=CountingProvider(log),
        run_dir=tmp_path / "run",
    )
    run = RunFolder(result.run_dir)
    stored = run.read_config().method
    assert isinstance(stored, ExternalMethodSettings)
    assert stored.model_dump() == {"name": "silent", "rollouts": 2}
    assert len(run.credits(SilentRecord).read()) == 2 * 2
    assert log.count("critic") == 0 and log.count("optimizer") == 0
    assert result.gates[0].decisions == []
    # The class alone registers it too, with its default settings.
    again = train(
        TinyTask(),
        method=SilentMethod,
        config={"iterations": 1, "batch_size": 1, "validation_size": 1, "concurrency": 1},
        provider=CountingProvider(CallLog()),
        run_dir=tmp_path / "again",
    )
    assert RunFolder(again.run_dir).read_config().method.model_dump() == {"name": "silent"}
    assert len(RunFolder(again.run_dir).credits(SilentRecord).read()) == 1  # rollouts=1


def test_train_starts_from_a_pack_library_objects_or_folders(tmp_path: Path) -> None:
    pack = export_pack({"reasoner": _colour_library()}, tmp_path / "pack")
    folder = tmp_path / "reasoner"
    _colour_library().save(folder)
    for label, libraries in (
        ("pack", pack),
        ("objects", {"reasoner": _colour_library()}),
        ("folders", {"reasoner": str(folder)}),
    ):
        result = train(
            TinyTask(),
            libraries=libraries,
            config={**SMALL, "init_libraries": {"retriever": str(folder)}},
            provider=CountingProvider(CallLog()),
            run_dir=tmp_path / label,
        )
        run = RunFolder(result.run_dir)
        start = run.load_library(run.relative(run.library_dir(0, "reasoner")), "reasoner", 4)
        assert [s.name for s in start.skills] == ["colour-answers"], label
        # The libraries given replace the config's folders, and config.json says so.
        assert run.read_config().init_libraries == {}, label
        assert result.scores[0].base == 1.0, label  # the start already answers right


def test_evaluate_scores_the_team_with_the_libraries_and_resumes(tmp_path: Path) -> None:
    log = CallLog()
    provider = CountingProvider(log)
    with_skill = evaluate(
        TinyTask(),
        libraries={"reasoner": _colour_library()},
        out=tmp_path / "skilled",
        provider=provider,
    )
    assert (with_skill.split, with_skill.questions, with_skill.failed) == ("test", 2, 0)
    assert with_skill.overall.reward == 1.0
    calls = len(log.calls)
    again = evaluate(
        TinyTask(),
        libraries={"reasoner": _colour_library()},
        out=tmp_path / "skilled",
        provider=provider,
    )
    assert len(log.calls) == calls and again.overall.reward == 1.0  # nothing asked again
    without = evaluate(
        TinyTask(), split="validation", limit=1, out=tmp_path / "empty", provider=provider
    )
    assert (without.split, without.questions, without.overall.reward) == ("validation", 1, 0.0)
    assert json.loads((tmp_path / "skilled" / "summary.json").read_text())["questions"] == 2


def test_load_pack_reads_a_pack_and_a_folder_of_library_folders(tmp_path: Path) -> None:
    library = _colour_library()
    pack = export_pack({"reasoner": library}, tmp_path / "pack")
    assert load_pack(pack)["reasoner"].content_hash() == library.content_hash()
    library.save(tmp_path / "team" / "reasoner")
    assert load_pack(str(tmp_path / "team"))["reasoner"].content_hash() == library.content_hash()


def test_bad_input_is_one_line_of_the_packages_errors(tmp_path: Path) -> None:
    provider = CountingProvider(CallLog())
    run = tmp_path / "run"
    with pytest.raises(TaskError) as unknown_task:
        train("nosuch", provider=provider, run_dir=run)
    assert "unknown task 'nosuch' (known: " in _one_line(unknown_task)
    with pytest.raises(TaskError) as unknown_eval_task:
        evaluate("nosuch", provider=provider, out=tmp_path / "eval")
    assert "unknown task 'nosuch'" in _one_line(unknown_eval_task)
    with pytest.raises(SkillError) as missing_pack:
        load_pack(tmp_path / "missing")
    assert "does not exist" in _one_line(missing_pack)
    with pytest.raises(SkillError) as missing_start:
        train(TinyTask(), libraries=tmp_path / "missing", provider=provider, run_dir=run)
    assert "missing" in _one_line(missing_start)
    with pytest.raises(ConfigError) as missing_folder:
        train(
            TinyTask(),
            libraries={"reasoner": tmp_path / "missing"},
            provider=provider,
            run_dir=run,
        )
    assert "is not a folder" in _one_line(missing_folder)
    with pytest.raises(ConfigError) as unknown_method:
        train(TinyTask(), method="nosuch", provider=provider, run_dir=run)
    assert "unknown training method 'nosuch' (known: grse" in _one_line(unknown_method)
    with pytest.raises(ConfigError) as bad_value:
        train(TinyTask(), config={"iterations": 0}, provider=provider, run_dir=run)
    assert "iterations" in _one_line(bad_value)
    with pytest.raises(ConfigError) as other_task:
        train(TinyTask(), config={"task": "demo"}, provider=provider, run_dir=run)
    assert "differs" in _one_line(other_task)
    with pytest.raises(ConfigError) as stranger:
        train(
            TinyTask(),
            libraries={"writer": SkillLibrary.empty("writer")},
            config=SMALL,
            provider=provider,
            run_dir=run,
        )
    assert "agent 'writer' is not in the team" in _one_line(stranger)
    assert not (run / "config.json").exists()  # no bad call started a run
