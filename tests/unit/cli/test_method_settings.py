"""Settings say who reads them: a setting the chosen method does not read is refused with one
line naming the method and the setting, from the flags, the TOML's [train] table and a Studio
context alike; defaults never are; `grse train --help` groups the options by method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grse_graph.cli import build_app, train_cmd
from grse_graph.cli.train_options import ProbeOptions
from grse_graph.errors import ConfigError
from grse_graph.methods.registry import BUILTIN_METHODS
from grse_graph.studio import train_config
from grse_graph.training.config import TrainConfig, train_config_from, unread_settings
from grse_graph.training.run_folder import RunFolder

runner = CliRunner()


class TrainingStarted(Exception):
    """Raised instead of training: the config passed every check."""


@pytest.fixture(autouse=True)
def _no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    # A refusal that does not happen must not start an engine or a run.
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise TrainingStarted

    monkeypatch.setattr(train_cmd, "_train", refuse)


def _refusal(*args: str) -> str:
    result = runner.invoke(build_app(), ["train", *args])
    assert isinstance(result.exception, ConfigError), result.exception
    message = str(result.exception)
    assert "\n" not in message
    return message


def _toml(tmp_path: Path, train: str) -> Path:
    path = tmp_path / "grse.toml"
    path.write_text(
        '[actor]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "fake"\n[train]\n' + train,
        encoding="utf-8",
    )
    return path


def test_skillmas_refuses_the_flags_it_does_not_read() -> None:
    base = ("--task", "demo", "--method", "skillmas")
    assert _refusal(*base, "--review") == (
        "method skillmas does not read setting 'review' (remove --review)"
    )
    assert _refusal(*base, "--delta", "0.1") == (
        "method skillmas does not read setting 'delta' (remove --delta)"
    )
    assert _refusal(*base, "--probe-credit") == (
        "method skillmas does not read setting 'probe' "
        "(remove --probe-credit/--probe-questions/--probe-budget/--probe-confidence)"
    )
    assert _refusal(*base, "--validation-size", "3") == (
        "method skillmas does not read setting 'validation_size' (remove --validation-size)"
    )
    assert _refusal(*base, "--review", "--delta", "0.1") == (
        "method skillmas does not read settings 'delta' (remove --delta), "
        "'review' (remove --review)"
    )


def test_one_rollout_per_question_refuses_no_first_agent_n() -> None:
    assert _refusal("--task", "demo", "--method", "maskills", "--no-first-agent-n") == (
        "method maskills does not read setting 'first_agent_n' (remove --no-first-agent-n)"
    )
    assert _refusal("--task", "demo", "--group-size", "1", "--no-first-agent-n") == (
        "method grse does not read setting 'first_agent_n' (remove --no-first-agent-n)"
    )


def test_the_methods_that_read_a_setting_still_take_it(tmp_path: Path) -> None:
    out = ("--out", str(tmp_path / "run"))
    for args in (
        ("--review", "--delta", "0.1", "--no-first-agent-n"),
        ("--method", "maskills", "--review", "--delta", "0.1", "--probe-credit"),
    ):
        result = runner.invoke(build_app(), ["train", "--task", "demo", *out, *args])
        assert isinstance(result.exception, TrainingStarted), result.exception


def test_the_toml_train_table_is_refused_naming_the_key(tmp_path: Path) -> None:
    config = _toml(tmp_path, 'task = "demo"\nmethod = "skillmas"\nschedule = {prune_every = 0}\n')
    assert _refusal("--config", str(config)) == (
        f"method skillmas does not read setting 'schedule' (remove schedule from [train] in "
        f"{config})"
    )
    # --method over a TOML that gives a setting the method does not read
    config = _toml(tmp_path, 'task = "demo"\nreview = true\n')
    assert _refusal("--config", str(config), "--method", "skillmas") == (
        f"method skillmas does not read setting 'review' (remove review from [train] in {config})"
    )


def test_defaults_are_never_refused(tmp_path: Path) -> None:
    # Every refusable setting spelled out at its default value.
    config = _toml(
        tmp_path,
        'task = "demo"\nmethod = "skillmas"\ndelta = 0.02\nreview = false\n'
        "first_agent_n = true\nvalidation_repeats = 1\n",
    )
    args = ["train", "--config", str(config), "--out", str(tmp_path / "run")]
    result = runner.invoke(build_app(), args)
    assert isinstance(result.exception, TrainingStarted), result.exception
    for name in BUILTIN_METHODS:
        assert unread_settings(TrainConfig(task="demo", method={"name": name})) == []


def test_skillmas_reads_validation_settings_only_with_its_validation_checkpoint() -> None:
    values = {"task": "demo", "validation_size": 3, "validation_repeats": 2}
    checkpointed = {**values, "method": {"name": "skillmas", "checkpoint": "validation"}}
    assert train_config_from(checkpointed, "flags").validation_size == 3
    with pytest.raises(ConfigError, match=r"'validation_size' .*'validation_repeats'"):
        train_config_from({**values, "method": "skillmas"}, "flags")


def test_a_resumed_skillmas_run_refuses_review(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    run.write_config(TrainConfig(task="demo", method={"name": "skillmas"}))
    assert _refusal("--resume", str(run.path), "--review") == (
        "method skillmas does not read setting 'review' (remove --review)"
    )


def test_a_studio_context_is_refused_naming_where_it_gave_the_setting() -> None:
    context = {"task": "demo", "train": {"method": {"name": "skillmas"}, "delta": 0.1}}
    with pytest.raises(ConfigError) as refused:
        train_config({**context, "review": True}, {})
    assert str(refused.value) == (
        "method skillmas does not read settings 'delta' (remove context.train.delta), "
        "'review' (remove context.review)"
    )
    given = {**context, "train": {"method": "skillmas"}, "review": False}
    assert train_config(given, {}).method.name == "skillmas"


def _help_sections(text: str) -> dict[str, list[str]]:
    """Each `Heading:` section of a plain --help and the options it lists."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = sections.setdefault(line[:-1], [])
        elif current is not None and line.strip().startswith("--"):
            current.append(line.split()[0])
    return sections


def test_train_help_groups_the_options_by_the_methods_that_read_them() -> None:
    result = runner.invoke(build_app(), ["train", "--help"], terminal_width=200)
    assert result.exit_code == 0
    sections = _help_sections(result.stdout)
    assert list(sections) == ["Every method", "GRSE and MASkills only", "GRSE only", "Options"]
    assert {"--task", "--method", "--iterations", "--batch-size"} <= set(sections["Every method"])
    assert sections["GRSE and MASkills only"] == [
        "--delta",
        "--review",
        "--probe-credit",
        "--probe-questions",
        "--probe-budget",
        "--probe-confidence",
    ]
    assert {"--group-size", "--dapo-filter", "--no-first-agent-n"} <= set(sections["GRSE only"])
    assert {"--config", "--json", "--help"} <= set(sections["Options"])


def test_probe_flags_set_the_probe_section_only_with_probe_credit() -> None:
    assert ProbeOptions(probe_credit=True, probe_confidence=0.8).section({}) == {"confidence": 0.8}
    toml = {"probe": {"questions": 24}}
    assert ProbeOptions(probe_budget=60, probe_confidence=0.8).section(toml) == {
        "questions": 24,
        "budget": 60,
        "confidence": 0.8,
    }
    assert ProbeOptions().section({}) is None
    with pytest.raises(ConfigError, match="only with --probe-credit"):
        ProbeOptions(probe_confidence=0.8).section({})


def test_a_probe_confidence_outside_0_1_is_refused_in_one_line(tmp_path: Path) -> None:
    args = ["--task", "demo", "--out", str(tmp_path / "run"), "--probe-credit"]
    result = runner.invoke(build_app(), ["train", *args, "--probe-confidence", "0.8"])
    assert isinstance(result.exception, TrainingStarted), result.exception
    message = _refusal(*args, "--probe-confidence", "1.5")
    assert "confidence" in message
