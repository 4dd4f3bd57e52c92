"""`grse skills validate|show|diff` through Typer's test runner."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from grse_graph.cli import build_app, skills_cmd
from grse_graph.errors import SkillError
from grse_graph.skills import Skill, SkillLibrary, export_pack

BROKEN = Path(__file__).parents[2] / "fixtures" / "skills" / "broken"
EXAMPLES = Path(__file__).parents[3] / "skills" / "examples" / "hotpotqa"


def _app() -> typer.Typer:
    app = typer.Typer()
    skills_cmd.register(app)
    return app


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(_app(), ["skills", *args])
    return result.exit_code, result.output


def _library(tmp_path: Path, name: str, skills: list[Skill]) -> Path:
    path = tmp_path / name
    SkillLibrary(agent="reasoner", skills=skills).save(path)
    return path


def test_registered_in_the_grse_app() -> None:
    result = CliRunner().invoke(build_app(), ["skills", "validate", str(EXAMPLES)])
    assert result.exit_code == 0, result.output
    assert result.output == "ok: 4 skills\n"


def test_validate_ok_for_a_library_and_a_single_skill(tmp_path: Path) -> None:
    path = _library(
        tmp_path, "lib", [Skill(name="a", description="d"), Skill(name="b", description="d")]
    )
    assert _invoke("validate", str(path)) == (0, "ok: 2 skills\n")
    assert _invoke("validate", str(path / "a")) == (0, "ok: 1 skills\n")


def test_validate_prints_one_line_per_problem_and_exits_1() -> None:
    code, output = _invoke("validate", str(BROKEN))
    assert code == 1
    lines = output.splitlines()
    assert len(lines) == len(list(BROKEN.iterdir()))
    assert all(line.startswith(str(BROKEN)) for line in lines)


def test_validate_missing_path(tmp_path: Path) -> None:
    assert _invoke("validate", str(tmp_path / "nope")) == (
        1,
        f"{tmp_path / 'nope'}: does not exist\n",
    )


def test_show_lists_skills_with_bookkeeping(tmp_path: Path) -> None:
    skill = Skill(name="short", description="Shortest span.", body="x" * 40)
    path = _library(tmp_path, "lib", [skill.with_utility(0.25).with_provenance("induced")])
    code, output = _invoke("show", str(path))
    assert code == 0
    row = next(line for line in output.splitlines() if "short" in line and "Shortest" in line)
    assert "10" in row and "+0.25" in row and "induced" in row


def test_show_a_pack_has_an_agent_column(tmp_path: Path) -> None:
    pack = export_pack(
        {"retriever": SkillLibrary(agent="retriever", skills=[Skill(name="hop", description="d")])},
        tmp_path / "pack",
    )
    code, output = _invoke("show", str(pack))
    assert code == 0
    assert "agent" in output and "retriever" in output and "hop" in output


def test_show_reports_problems_after_the_table() -> None:
    code, output = _invoke("show", str(BROKEN))
    assert code == 1
    assert "no-front-matter/SKILL.md:1: missing front matter" in output.replace("\n", "")


def test_diff_prints_the_library_diff(tmp_path: Path) -> None:
    old = _library(tmp_path, "old", [Skill(name="a", description="d", body="one")])
    new = _library(
        tmp_path,
        "new",
        [Skill(name="a", description="d", body="two"), Skill(name="b", description="d")],
    )
    code, output = _invoke("diff", str(old), str(new))
    assert code == 0
    assert output.startswith(f"--- {old}\n+++ {new}\nadded: b\nremoved: -\nchanged: a\n")
    assert "-one\n+two\n" in output
    assert _invoke("diff", str(old), str(old)) == (0, f"--- {old}\n+++ {old}\nno differences\n")


def test_diff_of_broken_library_is_a_one_line_error(tmp_path: Path) -> None:
    old = _library(tmp_path, "old", [Skill(name="a", description="d")])
    result = CliRunner().invoke(_app(), ["skills", "diff", str(old), str(BROKEN)])
    # The `grse` entry point prints a SkillError as one line and exits 1.
    assert result.exit_code == 1
    assert isinstance(result.exception, SkillError)
    message = str(result.exception)
    assert message.startswith(str(BROKEN)) and "\n" not in message
