"""`grse eval` / `grse baseline` argument handling (no engine is started on these paths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grse_graph.cli import build_app
from grse_graph.cli.eval_cmd import load_libraries, parse_library_option
from grse_graph.errors import ConfigError
from grse_graph.skills import Skill, SkillLibrary


def test_parse_library_option() -> None:
    assert parse_library_option("reasoner=skills/r") == ("reasoner", Path("skills/r"))
    with pytest.raises(ConfigError, match="expected AGENT=DIR"):
        parse_library_option("skills/r")


def test_load_libraries_reads_folders_per_agent(tmp_path: Path) -> None:
    SkillLibrary.build("reasoner", [Skill.build(name="short", description="d", body="b")]).save(
        tmp_path / "r"
    )
    libraries = load_libraries([f"reasoner={tmp_path / 'r'}"])
    assert libraries["reasoner"].names() == ["short"]
    with pytest.raises(ConfigError, match="is not a folder"):
        load_libraries([f"reasoner={tmp_path / 'missing'}"])
    with pytest.raises(ConfigError, match="given twice"):
        load_libraries([f"reasoner={tmp_path / 'r'}", f"reasoner={tmp_path / 'r'}"])


def test_bad_skill_mode_and_method_are_errors() -> None:
    app = build_app()
    with pytest.raises(ConfigError, match="--skill-mode 'both'"):
        app(["eval", "--task", "demo", "--skill-mode", "both"], standalone_mode=False)
    with pytest.raises(ConfigError, match="--method 'tot'"):
        app(["baseline", "--method", "tot", "--task", "demo"], standalone_mode=False)
