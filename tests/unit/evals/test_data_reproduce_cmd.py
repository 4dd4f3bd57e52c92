"""`grse reproduce TABLE OPTIONS` is the table's script: every option reaches it unchanged
(the same dry run as `python evals/<script> OPTIONS`), and its help names the data options."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.reproduce.data import SMOKE_FIXTURES
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import main, parser_for
from grse_graph.reproduce.settings import default_paper_dir


def _options(tmp_path: Path) -> list[str]:
    config = tmp_path / "actor.toml"
    config.write_text(
        "\n".join(
            f'[{role}]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "served-{role}"'
            for role in ("actor", "critic", "optimizer")
        ),
        encoding="utf-8",
    )
    return [
        *("--config", str(config)),
        *("--seeds", "2"),
        "--smoke",
        *("--limit", "1"),
        *("--out", str(tmp_path / "out")),
        "--dry-run",
        *("--jobs", "2"),
        *("--commit", "abc1234"),
        *("--paper-dir", str(default_paper_dir())),
        *("--iterations", "1"),
        *("--batch-size", "1"),
        *("--validation-size", "1"),
        *("--group-size", "3"),
        "--additions",
        *("--data-locomo", str(SMOKE_FIXTURES / "locomo_smoke.json")),
        *("--fixtures", str(SMOKE_FIXTURES)),
    ]


def test_every_option_of_the_script_is_among_those_the_test_passes(tmp_path: Path) -> None:
    passed = {arg for arg in _options(tmp_path) if arg.startswith("--")}
    table_only = {"--planted", "--design"}  # Tables 4 and 5's own, passed below
    flags = {
        flag
        for action in parser_for(TABLES["table2"])._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }
    assert flags - table_only - {"--data-hotpotqa"} <= passed


def test_grse_reproduce_forwards_every_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _options(tmp_path)
    assert main("table2", args) == 0
    script = capsys.readouterr().out
    result = CliRunner().invoke(build_app(), ["reproduce", "table2", *args])
    assert result.exit_code == 0, result.output
    assert result.output == script
    assert "commit abc1234; seeds 0" in script  # --smoke: one seed
    assert "project's additions on (--additions)" in script
    assert "locomo data: " in script and "(from --data-locomo)" in script
    assert "served-actor" in script
    demo = ["--design", "demo", "--planted", "/nonexistent/planted.json"]
    table45 = [*args, *demo]
    assert main("table4_5", table45) == 1
    script = capsys.readouterr().out
    result = CliRunner().invoke(build_app(), ["reproduce", "table4_5", *table45])
    assert result.exit_code == 1 and result.output == script
    assert "/nonexistent/planted.json" in script


def test_grse_reproduce_help_names_the_data_options() -> None:
    listing = CliRunner().invoke(build_app(), ["reproduce", "--help"])
    assert listing.exit_code == 0
    for option in ("--data-hotpotqa", "--data-locomo", "--additions", "--smoke"):
        assert option in listing.output
    table = CliRunner().invoke(build_app(), ["reproduce", "table1", "--help"])
    assert table.exit_code == 0
    assert "--data-hotpotqa PATH" in table.output and "GRSE_HOTPOTQA" in table.output
