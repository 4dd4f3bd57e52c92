"""CLI conventions: --version, completion, --json, one meaning per option, help markup, doctor
on a remote-only setup, unknown GRSE_* variables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
import typer
from typer.testing import CliRunner

from grse_graph import __version__
from grse_graph.cli import build_app
from grse_graph.cli.environment import known_variables, unknown_variable_warnings
from grse_graph.cli.options import CONFIG_HELP
from grse_graph.llm.config import load_config
from tests.fakeserver import FakeOpenAIServer

# CliRunner merges stderr into output unless told otherwise (click >= 8.2 keeps both).
runner = CliRunner()


def _commands() -> dict[str, Any]:
    """Every leaf command (a click command) as 'name' or 'group name'."""
    root: Any = typer.main.get_command(build_app())
    found: dict[str, Any] = {}
    with click.Context(root) as context:
        for name in root.list_commands(context):
            command = root.get_command(context, name)
            if hasattr(command, "list_commands"):
                with click.Context(command, parent=context) as inner:
                    for sub in command.list_commands(inner):
                        found[f"{name} {sub}"] = command.get_command(inner, sub)
            else:
                found[name] = command
    return found


def test_version_prints_the_package_version() -> None:
    result = runner.invoke(build_app(), ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"grse {__version__}"


def test_shell_completion_script_is_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without this, typer ignores "bash" and detects the shell from the process tree, which a
    # run started from a background job or a service has none of ("Shell  not supported.").
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    result = runner.invoke(build_app(), ["--show-completion", "bash"], prog_name="grse")
    assert result.exit_code == 0, (result.output, result.exception)
    assert "_GRSE_COMPLETE=complete_bash" in result.stdout


def test_help_text_keeps_square_brackets() -> None:
    result = runner.invoke(build_app(), ["doctor", "--help"])
    assert result.exit_code == 0
    assert "[actor]" in result.stdout and "[engine]" in result.stdout


def test_config_means_the_same_file_in_every_command() -> None:
    with_config = {
        name: next(p for p in command.params if "--config" in getattr(p, "opts", []))
        for name, command in _commands().items()
        if any("--config" in getattr(p, "opts", []) for p in command.params)
    }
    assert {"eval", "baseline", "doctor", "train"} <= set(with_config)
    assert {name: getattr(p, "help", None) for name, p in with_config.items()} == {
        name: CONFIG_HELP for name in with_config
    }
    assert not any(
        "--llm-config" in getattr(p, "opts", []) for c in _commands().values() for p in c.params
    )


def test_reporting_commands_offer_json() -> None:
    commands = _commands()
    for name in ("eval", "baseline", "score", "doctor", "train"):
        assert any("--json" in getattr(p, "opts", []) for p in commands[name].params), name


def test_unknown_grse_variable_names_the_closest_known_one() -> None:
    env = {"GRSE_ACTOR_BASEURL": "http://x/v1", "GRSE_CRITIC_MODEL": "m", "HOME": "/root"}
    assert unknown_variable_warnings(env) == [
        "warning: GRSE_ACTOR_BASEURL is not a grse setting and is ignored; "
        "did you mean GRSE_ACTOR_BASE_URL?"
    ]
    assert "GRSE_ENGINE_THREADS" in known_variables()


def test_a_variable_named_as_api_key_env_is_not_reported() -> None:
    env = {"GRSE_ACTOR_API_KEY_ENV": "GRSE_VLLM_KEY", "GRSE_VLLM_KEY": "secret"}
    config = load_config(env=env)
    assert unknown_variable_warnings(env, config) == []
    assert unknown_variable_warnings(env) != []


def test_every_command_warns_about_an_unknown_variable_on_stderr() -> None:
    result = runner.invoke(build_app(), ["--version"], env={"GRSE_ENGNE_THREADS": "2"})
    # --version is eager and exits before the root callback; a real command runs it.
    result = runner.invoke(build_app(), ["doctor", "--help"], env={"GRSE_ENGNE_THREADS": "2"})
    assert "GRSE_ENGNE_THREADS" in result.stderr
    assert "did you mean GRSE_ENGINE_THREADS?" in result.stderr
    assert "GRSE_ENGNE_THREADS" not in result.stdout


def _remote_config(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    config = tmp_path / "grse.toml"
    config.write_text(
        "".join(
            f'[{role}]\nbase_url = "{server.base_url(role)}"\nmodel = "fake"\n'
            for role in ("actor", "critic", "optimizer")
        )
        # No embedded engine can be found: on a remote-only setup that is not a failure.
        + '[engine]\nengine = "llama-server"\nllama_server_path = "/nonexistent/llama-server"\n',
        encoding="utf-8",
    )
    return config


def test_doctor_is_ok_for_a_remote_only_setup_and_reports_json(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        config = _remote_config(tmp_path, server)
        result = runner.invoke(build_app(), ["doctor", "--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True
    preferred = next(c for c in report["checks"] if c["item"] == "preferred")
    assert preferred["status"] == "info" and "not needed" in preferred["detail"]
    endpoints = [c for c in report["checks"] if c["area"] == "endpoint"]
    assert [c["status"] for c in endpoints] == ["ok", "ok", "ok"]


def test_doctor_fails_when_the_embedded_engine_is_needed_but_missing(tmp_path: Path) -> None:
    config = tmp_path / "grse.toml"
    config.write_text(
        '[engine]\nengine = "llama-server"\nllama_server_path = "/nonexistent/llama-server"\n'
    )
    result = runner.invoke(build_app(), ["doctor", "--config", str(config), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert next(c for c in report["checks"] if c["item"] == "preferred")["status"] == "fail"


def test_score_json_is_one_document_with_records_and_summary(tmp_path: Path) -> None:
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        '{"prediction": "Paris", "answer": "Paris"}\n{"prediction": "Rome", "answer": "Paris"}\n'
    )
    result = runner.invoke(
        build_app(), ["score", "-m", "hotpotqa", "-i", str(predictions), "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [r["em"] for r in document["records"]] == [1.0, 0.0]
    assert document["summary"]["overall"]["mean_em"] == pytest.approx(0.5)


def test_eval_json_prints_the_summary_and_keeps_messages_off_stdout(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        config = _remote_config(tmp_path, server)
        out = tmp_path / "eval"
        result = runner.invoke(
            build_app(),
            [
                "eval",
                "--task",
                "demo",
                "--limit",
                "2",
                "--config",
                str(config),
                "--out",
                str(out),
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["questions"] == 2 and summary["finished"] == 2 and summary["failed"] == 0
    assert "results in" in result.stderr
    predictions = [
        json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()
    ]
    assert all(p["trace_id"] for p in predictions)


def test_eval_langsmith_runs_offline_without_a_key(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        config = _remote_config(tmp_path, server)
        out = tmp_path / "ls"
        result = runner.invoke(
            build_app(),
            [
                "eval",
                "--task",
                "demo",
                "--limit",
                "2",
                "--config",
                str(config),
                "--out",
                str(out),
                "--langsmith",
                "--json",
            ],
            env={"LANGSMITH_API_KEY": "", "LANGCHAIN_API_KEY": "", "LANGSMITH_TRACING": "false"},
        )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["uploaded"] is False and summary["examples"] == 2 and summary["failed"] == 0
    assert set(summary["means"]) >= {"reward", "failed"}
    assert json.loads((out / "langsmith.json").read_text())["experiment"] == summary["experiment"]


def test_one_grse_toml_configures_train_roles_and_train_table_and_train_reports_json(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer() as server:
        config = _remote_config(tmp_path, server)
        config.write_text(
            config.read_text()
            + '[train]\ntask = "demo"\niterations = 1\nbatch_size = 1\nvalidation_size = 1\n'
            + "group_size = 2\nconcurrency = 1\n"
        )
        run = tmp_path / "run"
        result = runner.invoke(
            build_app(),
            [
                "train",
                "--config",
                str(config),
                "--out",
                str(run),
                "--checkpointer",
                "sqlite",
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["result"]["iterations_done"] == 1
    assert document["usage"]["roles"]["actor"]["calls"] > 0
    assert (run / "checkpoints.sqlite").exists() and (run / "checkpointer.json").exists()
    assert "report:" in result.stderr
