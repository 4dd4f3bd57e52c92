"""The training package's parts: run-folder files, config, review helpers, progress, CLI flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.errors import ConfigError, GrseError
from grse_graph.jsonl import JsonlStore, RunFolderError
from grse_graph.llm.provider import SamplingSettings
from grse_graph.methods.registry import METHOD_NAMES
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.training.config import TrainConfig
from grse_graph.training.ids import derive_seed, variant_hash
from grse_graph.training.progress import ProgressEvent
from grse_graph.training.review import (
    ReviewAnswer,
    ReviewRequest,
    apply_review,
    proposed_changes,
)
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.state import RESET, units
from grse_graph.training.terminal import ProgressTracker, TerminalReviewer


class Item(BaseModel):
    key: str
    value: int


def test_jsonl_store_reads_back_and_ignores_then_truncates_a_partial_last_line(
    tmp_path: Path,
) -> None:
    store = JsonlStore(tmp_path / "items.jsonl", Item, key=lambda r: r.key)
    store.append(Item(key="a", value=1))
    store.append(Item(key="b", value=2))
    with store.path.open("a") as handle:  # a crash in the middle of a write
        handle.write('{"key": "c", "val')
    fresh = JsonlStore(store.path, Item, key=lambda r: r.key)
    assert [r.key for r in fresh.read()] == ["a", "b"]
    assert fresh.get("c") is None
    fresh.append(Item(key="d", value=4))
    assert [r.key for r in JsonlStore(store.path, Item).read()] == ["a", "b", "d"]
    assert fresh.get("d") == Item(key="d", value=4)


def test_jsonl_store_names_file_and_line_of_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"key": "a", "value": 1}\n{"key": "b", "value": "x"}\n')
    with pytest.raises(RunFolderError, match=r"items.jsonl:2: value"):
        JsonlStore(path, Item).read()


def test_run_folder_config_round_trip_and_missing_config(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    assert not (tmp_path / "run").exists()  # constructing touches nothing
    with pytest.raises(RunFolderError, match="not a run folder"):
        run.read_config()
    config = TrainConfig(task="demo", iterations=2, dapo_filter=True)
    run.write_config(config)
    assert run.read_config() == config


def test_run_folder_config_error_names_the_field(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    run.write_config(TrainConfig(task="demo"))
    data = run.config_path.read_text().replace('"iterations": 5', '"iterations": 0')
    run.config_path.write_text(data)
    with pytest.raises(RunFolderError) as caught:
        run.read_config()
    assert str(caught.value) == (
        f"{run.config_path}: iterations: Input should be greater than or equal to 1 (got 0)"
    )


def test_train_config_has_the_paper_defaults_and_rejects_a_fixed_training_seed() -> None:
    config = TrainConfig(task="locomo")
    assert (config.iterations, config.method.group_size, config.batch_size) == (5, 4, 24)
    assert (config.delta, config.library_limit, config.method.dapo_filter) == (0.02, 4, False)
    assert config.training_sampling == SamplingSettings.training(top_k=20)
    assert config.validation_sampling == SamplingSettings.greedy()
    assert config.operator_schedule().prune_every == 3
    with pytest.raises(ValidationError, match="seeds are set per rollout"):
        TrainConfig(task="demo", training_sampling=SamplingSettings.training(seed=3))


def test_unit_reducer_appends_and_resets() -> None:
    assert units(["a"], ["b"]) == ["a", "b"]
    assert units(["a", "b"], [RESET]) == []
    assert units(["a"], [RESET, "c"]) == ["c"]


def test_seeds_differ_per_unit_and_variant_hash_includes_sampling() -> None:
    seeds = {derive_seed(0, f"it1-q{i}-g{g}") for i in range(10) for g in range(4)}
    assert len(seeds) == 40
    hashes = {"a": "1", "b": "2"}
    assert variant_hash(hashes, SamplingSettings.greedy()) != variant_hash(
        hashes, SamplingSettings.training()
    )
    assert variant_hash(hashes, SamplingSettings.greedy()) == variant_hash(
        dict(reversed(hashes.items())), SamplingSettings.greedy()
    )


def _skill(name: str, body: str) -> Skill:
    return Skill(name=name, description=f"{name} skill.", body=body)


def test_review_changes_and_apply_reject_and_edit() -> None:
    current = SkillLibrary(agent="reasoner", skills=[_skill("keep", "old"), _skill("gone", "x")])
    candidate = SkillLibrary(agent="reasoner", skills=[_skill("keep", "new"), _skill("fresh", "y")])
    requests = proposed_changes(1, {"reasoner": current}, {"reasoner": candidate})
    assert [(r.skill, r.change) for r in requests] == [
        ("fresh", "added"),
        ("gone", "removed"),
        ("keep", "changed"),
    ]
    by_name = {r.skill: r for r in requests}
    answers = [
        (by_name["fresh"], ReviewAnswer(verdict="reject")),
        (by_name["gone"], ReviewAnswer(verdict="reject")),
        (by_name["keep"], ReviewAnswer(verdict="edit", body="edited\n")),
    ]
    revised = apply_review(current, candidate, answers)
    assert revised.names() == ["gone", "keep"]
    assert revised.get("keep").body.strip() == "edited"
    assert revised.get("gone").body.strip() == "x"


def test_review_answer_parsing() -> None:
    assert ReviewAnswer.parse(" Accept ").verdict == "accept"
    assert ReviewAnswer.parse({"verdict": "reject"}).verdict == "reject"
    with pytest.raises(GrseError, match="non-empty body"):
        ReviewAnswer.parse({"verdict": "edit", "body": " "})
    with pytest.raises(GrseError, match="review answer"):
        ReviewAnswer.parse("maybe")


def test_terminal_reviewer_reads_an_edit_from_the_terminal() -> None:
    import io

    from rich.console import Console

    replies = iter(["x", "e", "line one", "line two", "."])
    reviewer = TerminalReviewer(Console(file=io.StringIO()), ask=lambda _: next(replies), editor="")
    request = ReviewRequest(
        iteration=1, agent="a", skill="s", change="added", before=None, after="body", diff="+body"
    )
    answer = reviewer(request)
    assert answer == ReviewAnswer(verdict="edit", body="line one\nline two\n")


def test_progress_tracker_counts_units_and_estimates_the_remaining_time() -> None:
    now = [0.0]
    tracker = ProgressTracker(iterations=2, clock=lambda: now[0])
    tracker(ProgressEvent(kind="stage_started", iteration=1, stage="rollouts", total=4))
    now[0] = 10.0
    tracker(ProgressEvent(kind="unit_done", iteration=1, stage="rollouts", unit_id="u1"))
    assert (tracker.rollouts_done, tracker.rollouts_total) == (1, 4)
    assert tracker.eta() is None  # no finished iteration to extrapolate the next one from
    now[0] = 100.0
    tracker(ProgressEvent(kind="iteration_done", iteration=1, stage="commit"))
    tracker(ProgressEvent(kind="stage_started", iteration=2, stage="rollouts", total=4))
    now[0] = 110.0
    tracker(ProgressEvent(kind="unit_done", iteration=2, stage="rollouts", unit_id="u2"))
    # 3 rollouts left at 10 s each; no further iteration after this one.
    assert tracker.eta() == pytest.approx(30.0)


def test_grse_train_needs_a_task_and_rejects_unknown_methods(tmp_path: Path) -> None:
    app = build_app()
    result = CliRunner().invoke(app, ["train", "--out", str(tmp_path / "r")])
    assert isinstance(result.exception, ConfigError)
    assert "--task is required" in str(result.exception)
    result = CliRunner().invoke(app, ["train", "--task", "demo", "--method", "nosuch"])
    assert isinstance(result.exception, ConfigError)
    bad = tmp_path / "train.toml"
    bad.write_text("[train]\ngroup_size = 0\n")
    result = CliRunner().invoke(app, ["train", "--task", "demo", "--config", str(bad)])
    assert isinstance(result.exception, ConfigError)
    assert "group_size" in str(result.exception)


def test_train_flags_fill_the_method_section_and_resume_keeps_the_runs_method(
    tmp_path: Path,
) -> None:
    from grse_graph.cli.train_setup import build_train_config
    from grse_graph.methods.grse.method import GrseSettings

    config = build_train_config(
        {"task": "demo"},
        {"method": "grse", "group_size": 2, "structured": False},
        "flags",
        training_top_k=20,
    )
    assert config.method == GrseSettings(group_size=2, structured=False)
    with pytest.raises(ConfigError, match="flags: method"):
        build_train_config({"task": "demo"}, {"group_size": 0}, "flags", training_top_k=20)
    run = RunFolder(tmp_path / "run")
    run.write_config(TrainConfig(task="demo"))
    other = next(name for name in METHOD_NAMES if name != "grse")
    args = ["train", "--resume", str(run.path), "--method", other]
    result = CliRunner().invoke(build_app(), args)
    assert isinstance(result.exception, ConfigError)
    assert f"--method {other}: {run.path} was trained with grse" in str(result.exception)


def test_run_usage_adds_this_session_to_the_earlier_sessions_once(tmp_path: Path) -> None:
    from grse_graph.llm import UsageLedger
    from grse_graph.llm.accounting import RoleUsage, UsageReport
    from grse_graph.training.session import run_usage

    run = RunFolder(tmp_path / "run")
    run.path.mkdir(parents=True)
    earlier = UsageReport(roles={"critic": RoleUsage(calls=3, prompt_tokens=100)})
    run.write_usage(earlier.model_dump(mode="json"))
    usage = run_usage(run, UsageLedger())
    run.write_usage(usage())  # the report node writes it ...
    run.write_usage(usage())  # ... and the CLI again when the session ends: still counted once
    assert run.read_usage()["roles"]["critic"]["calls"] == 3
    assert run.read_usage()["total"]["prompt_tokens"] == 100
    assert run_usage(RunFolder(tmp_path / "new"), UsageLedger())()["total"]["calls"] == 0
