"""`grse serve vllm` and `grse doctor`, on a Typer app with only these commands registered."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer
from typer.testing import CliRunner

from grse_graph.cli import doctor_cmd, serve_cmd
from grse_graph.errors import ConfigError
from grse_graph.llm.config import load_config


def _app() -> typer.Typer:
    app = typer.Typer()
    serve_cmd.register(app)
    doctor_cmd.register(app)
    return app


def test_serve_vllm_dry_run_prints_the_command() -> None:
    result = CliRunner().invoke(
        _app(),
        ["serve", "vllm", "--model", "Qwen/Qwen2.5-7B-Instruct", "--tensor-parallel", "2",
         "--data-parallel", "2", "--max-model-len", "8192", "--port", "8001", "--dry-run"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    command = shlex.split(result.stdout.strip().splitlines()[-1])
    assert command[:3] == ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]
    assert "--enable-prefix-caching" in command
    assert command[command.index("--tool-call-parser") + 1] == "hermes"
    assert command[command.index("--tensor-parallel-size") + 1] == "2"
    assert command[command.index("--max-model-len") + 1] == "8192"


def test_serve_vllm_warns_for_unknown_family() -> None:
    result = CliRunner().invoke(
        _app(), ["serve", "vllm", "--model", "google/gemma-3-4b-it", "--dry-run"]
    )
    assert result.exit_code == 0
    assert "warning: unknown model family" in result.stderr
    assert "--tool-call-parser" not in result.stdout


def test_serve_vllm_without_vllm_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        _app(),
        ["serve", "vllm", "--model", "Qwen/Qwen2.5-7B-Instruct"],
        env={"PATH": str(tmp_path)},
    )
    assert isinstance(result.exception, ConfigError)
    assert "vllm is not installed" in str(result.exception)


def test_doctor_reports_unreachable_and_keyless_endpoints(tmp_path: Path) -> None:
    config = tmp_path / "grse.toml"
    config.write_text(
        '[critic]\nbase_url = "http://127.0.0.1:1/v1"\n'
        '[optimizer]\nbase_url = "http://127.0.0.1:1/v1"\napi_key_env = "GRSE_TEST_ABSENT_KEY"\n',
        encoding="utf-8",
    )
    checks = {
        (check.area, check.item): check
        for check in doctor_cmd.run_checks(load_config(config, env={}))
    }
    assert checks[("endpoint", "actor")].status == "ok"
    assert "started on demand" in checks[("endpoint", "actor")].detail
    assert checks[("endpoint", "critic")].status == "fail"
    assert checks[("endpoint", "optimizer")].status == "fail"
    assert "GRSE_TEST_ABSENT_KEY" in checks[("endpoint", "optimizer")].detail
    assert ("engine", "preferred") in checks
    assert ("model", "default") in checks and ("model", "small") in checks


def test_doctor_command_prints_a_table_and_exits_1_on_failure(tmp_path: Path) -> None:
    config = tmp_path / "grse.toml"
    config.write_text('[critic]\nbase_url = "http://127.0.0.1:1/v1"\n', encoding="utf-8")
    result = CliRunner().invoke(_app(), ["doctor", "--config", str(config)])
    assert result.exit_code == 1
    assert "grse doctor" in result.stdout
    assert "critic" in result.stdout
