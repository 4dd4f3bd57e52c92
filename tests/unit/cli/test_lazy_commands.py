"""The `grse` command imports a command's module only when that command runs or is listed:
`grse --version` and `grse skills validate` start without the training stack (7-9 s before,
0.6-0.8 s after, `/usr/bin/time grse ...` beside a running engine, so the ratio counts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from grse_graph.cli import COMMAND_MODULES, build_app
from grse_graph.cli.lazy import registered_commands

HEAVY = ("langchain_core", "openai", "matplotlib", "grse_graph.training")


def _heavy_modules_after(*args: str) -> list[str]:
    """Which of `HEAVY` `grse ARGS`, run in a fresh interpreter, has imported when it ends."""
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: print(json.dumps([m for m in {HEAVY!r} if m in sys.modules])))\n"
        f"sys.argv = ['grse', *{list(args)!r}]\n"
        "from grse_graph.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_version_and_skills_validate_import_no_training_stack(tmp_path: Path) -> None:
    assert _heavy_modules_after("--version") == []
    assert _heavy_modules_after("skills", "validate", str(tmp_path)) == []


def test_a_command_s_module_is_imported_when_it_runs() -> None:
    assert "grse_graph.training" in _heavy_modules_after("train", "--help")


def _listed_commands(*args: str) -> list[str]:
    result = CliRunner().invoke(build_app(), [*args, "--help"])
    assert result.exit_code == 0, result.output
    section = result.output.split("Commands:")[1]
    return [line.split()[0] for line in section.splitlines() if line.startswith("  ")]


def test_every_command_is_listed_in_order_and_each_module_registers_its_names() -> None:
    assert _listed_commands() == list(COMMAND_MODULES)
    for name, module in COMMAND_MODULES.items():
        assert name in registered_commands(module), (name, module)


def test_skills_lists_audit_from_its_own_module_after_the_file_commands() -> None:
    assert _listed_commands("skills") == ["validate", "show", "diff", "export", "audit"]
    result = CliRunner().invoke(build_app(), ["skills", "audit", "--help"])
    assert result.exit_code == 0
    assert "--task" in result.output


def test_an_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(build_app(), ["trian"])
    assert result.exit_code == 2
    assert "No such command 'trian'" in result.output
