"""`grse skills validate|show|diff`: inspect skill folders, libraries and packs on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from grse_graph.errors import SkillError
from grse_graph.skills import PathReport, Skill, approx_tokens, inspect_path
from grse_graph.skills.diff import library_diff

PathArgument = Annotated[
    Path, typer.Argument(help="A skill folder, a library folder, a folder of libraries or a pack.")
]


def validate(path: PathArgument) -> None:
    """Check PATH against the Agent Skills spec and this project's limits.

    Prints `ok: N skills`, or one line per problem and exits 1.
    """
    report = inspect_path(path)
    if report.problems:
        for problem in report.problems:
            typer.echo(problem)
        raise typer.Exit(1)
    typer.echo(f"ok: {report.skill_count} skills")


def _utility(skill: Skill) -> str:
    return "-" if skill.utility is None else f"{skill.utility:+.2f}"


def show(path: PathArgument) -> None:
    """List the skills under PATH with body tokens, utility and provenance.

    Problems found are printed after the table, one line each, and the exit code is 1.
    """
    report = inspect_path(path)
    console = Console(highlight=False)
    several = len(report.groups) > 1 or report.kind in ("team", "pack")
    table = Table(title=f"{report.path} ({report.kind}, {report.skill_count} skills)")
    if several:
        table.add_column("agent", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("description", ratio=1)
    table.add_column("≈tokens", justify="right")
    table.add_column("utility", justify="right")
    table.add_column("provenance")
    for group, skills in sorted(report.groups.items()):
        for skill in skills:
            row = [
                skill.name,
                " ".join(skill.description.split()),
                str(approx_tokens(skill.body)),
                _utility(skill),
                skill.provenance or "-",
            ]
            table.add_row(*([group, *row] if several else row))
    console.print(table)
    if report.problems:
        for problem in report.problems:
            typer.echo(problem)
        raise typer.Exit(1)


def _skills_by_group(report: PathReport) -> dict[str, dict[str, Skill]]:
    if report.problems:
        raise SkillError(report.problems[0])
    return {group: {s.name: s for s in skills} for group, skills in report.groups.items()}


def diff(
    a: Annotated[Path, typer.Argument(help="The old library (or skill folder, or pack).")],
    b: Annotated[Path, typer.Argument(help="The new library (or skill folder, or pack).")],
) -> None:
    """Print a readable diff from library A to library B (summary, then unified diffs)."""
    old, new = inspect_path(a), inspect_path(b)
    if {old.kind, new.kind} <= {"skill", "library"}:
        # A lone skill or library is one group named after its folder; compare them directly.
        old_skills = {n: s for g in _skills_by_group(old).values() for n, s in g.items()}
        new_skills = {n: s for g in _skills_by_group(new).values() for n, s in g.items()}
        typer.echo(library_diff(old_skills, new_skills, str(a), str(b)), nl=False)
        return
    if old.kind != new.kind:
        raise SkillError(f"cannot diff a {old.kind} ({a}) with a {new.kind} ({b})")
    old_groups, new_groups = _skills_by_group(old), _skills_by_group(new)
    for agent in sorted(set(old_groups) | set(new_groups)):
        typer.echo(
            library_diff(
                old_groups.get(agent, {}), new_groups.get(agent, {}), f"{a}/{agent}", f"{b}/{agent}"
            ),
            nl=False,
        )


def register(app: typer.Typer) -> None:
    """Register `grse skills validate|show|diff`."""
    skills = typer.Typer(
        help="Validate, list and compare SKILL.md skill libraries.", no_args_is_help=True
    )
    skills.command("validate")(validate)
    skills.command("show")(show)
    skills.command("diff")(diff)
    app.add_typer(skills, name="skills")
