"""`grse skills validate|show|diff|export|audit`: inspect, ship and measure skill folders,
libraries and packs (`audit` lives in `audit_cmd`: it runs the team, the others only read files).

Everything printed comes from files the user may not have written, so it is treated as text:
every name, description, path and problem is escaped with `shown` (control characters are
displayed, not executed), Rich renders plain `Text` (no markup, no links, no emoji), and output
is encoded for the terminal with backslash escapes, so a strict ASCII terminal still gets one
line per problem instead of a traceback.
"""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TextIO, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from grse_graph.errors import SkillError
from grse_graph.skills import PathReport, Skill, approx_tokens, inspect_path, shown
from grse_graph.skills.diff import library_diff

from .lazy import lazy_group

PathArgument = Annotated[
    Path, typer.Argument(help="A skill folder, a library folder, a folder of libraries or a pack.")
]
F = TypeVar("F", bound=Callable[..., Any])


def _encodable(text: str, stream: TextIO) -> str:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return text.encode(encoding, "backslashreplace").decode(encoding)


def _emit(text: str) -> None:
    typer.echo(_encodable(text, sys.stdout), nl=False)


def one_line_errors(command: F) -> F:
    """Any `SkillError` or `OSError` leaves the command as one terminal-safe `SkillError`
    line (the `grse` entry point prints it and exits 1)."""

    @wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except SkillError as error:
            raise SkillError(_encodable(shown(error), sys.stderr)) from None
        except OSError as error:
            where = shown(error.filename) if error.filename else "skills"
            reason = (error.strerror or type(error).__name__).lower()
            raise SkillError(_encodable(f"{where}: {reason}", sys.stderr)) from None

    return run  # type: ignore[return-value]


@contextmanager
def _problems_exit(report: PathReport) -> Iterator[None]:
    yield
    if report.problems:
        _emit("".join(f"{shown(problem)}\n" for problem in report.problems))
        raise typer.Exit(1)


@one_line_errors
def validate(path: PathArgument) -> None:
    """Check PATH against the Agent Skills spec and this project's limits.

    Prints `ok: N skills`, or one line per problem and exits 1.
    """
    report = inspect_path(path)
    with _problems_exit(report):
        if not report.problems:
            _emit(f"ok: {report.skill_count} skills\n")


def _cell(text: str) -> Text:
    return Text(shown(" ".join(text.split())))


@one_line_errors
def show(path: PathArgument) -> None:
    """List the skills under PATH with body tokens, utility and provenance.

    Problems found are printed after the table, one line each, and the exit code is 1.
    """
    report = inspect_path(path)
    several = len(report.groups) > 1 or report.kind in ("team", "pack")
    table = Table(title=Text(f"{report.path} ({report.kind}, {report.skill_count} skills)"))
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
                _cell(skill.name),
                _cell(skill.description),
                Text(str(approx_tokens(skill.body))),
                Text("-" if skill.utility is None else f"{skill.utility:+.2f}"),
                _cell(skill.provenance or "-"),
            ]
            table.add_row(*([_cell(group), *row] if several else row))
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=shutil.get_terminal_size((100, 24)).columns,
        markup=False,
        highlight=False,
        emoji=False,
        color_system=None,
    )
    console.print(table)
    with _problems_exit(report):
        _emit(buffer.getvalue())


def _skills_by_group(report: PathReport) -> dict[str, dict[str, Skill]]:
    if report.problems:
        raise SkillError(report.problems[0])
    return {group: {s.name: s for s in skills} for group, skills in report.groups.items()}


@one_line_errors
def diff(
    a: Annotated[Path, typer.Argument(help="The old library (or skill folder, or pack).")],
    b: Annotated[Path, typer.Argument(help="The new library (or skill folder, or pack).")],
) -> None:
    """Print a readable diff from library A to library B (summary, then unified diffs).

    Diff lines are escaped: control characters and escape sequences are shown, not executed.
    """
    old, new = inspect_path(a), inspect_path(b)
    if {old.kind, new.kind} <= {"skill", "library"}:
        # A lone skill or library is one group named after its folder; compare them directly.
        old_skills = {n: s for g in _skills_by_group(old).values() for n, s in g.items()}
        new_skills = {n: s for g in _skills_by_group(new).values() for n, s in g.items()}
        _emit(library_diff(old_skills, new_skills, str(a), str(b)))
        return
    if old.kind != new.kind:
        raise SkillError(f"cannot diff a {old.kind} ({shown(a)}) with a {new.kind} ({shown(b)})")
    old_groups, new_groups = _skills_by_group(old), _skills_by_group(new)
    for agent in sorted(set(old_groups) | set(new_groups)):
        _emit(
            library_diff(
                old_groups.get(agent, {}), new_groups.get(agent, {}), f"{a}/{agent}", f"{b}/{agent}"
            )
        )


@one_line_errors
def export(
    run: Annotated[Path, typer.Argument(help="A training run folder (grse train --run-dir).")],
    pack: Annotated[Path, typer.Argument(help="The pack folder to write (absent or empty).")],
    iteration: Annotated[
        int | None,
        typer.Option(min=0, help="Export the libraries after this iteration (default: latest)."),
    ] = None,
    bookkeeping: Annotated[
        bool,
        typer.Option(
            "--bookkeeping/--no-bookkeeping",
            help="Keep the grse-* training metadata (utility, provenance, ...) in the pack.",
        ),
    ] = True,
) -> None:
    """Write the libraries of training run RUN as a pack at PACK, ready for deepagents.

    PACK must be absent, an empty folder, or a pack written earlier that is unchanged.
    """
    # Imported here: the training stack is not needed by the other `grse skills` commands.
    from grse_graph.training.run_export import export_run_pack

    written = export_run_pack(run, iteration, pack, bookkeeping=bookkeeping)
    report = inspect_path(written)
    agents = ", ".join(
        f"{agent} ({len(skills)})" for agent, skills in sorted(report.groups.items())
    )
    _emit(f"wrote {shown(written)}: {report.skill_count} skills, agents {agents or '-'}\n")


def register(app: typer.Typer) -> None:
    """Register `grse skills validate|show|diff|export|audit`."""
    skills = typer.Typer(
        help="Validate, list, compare, export and audit SKILL.md skill libraries.",
        no_args_is_help=True,
        rich_markup_mode=None,
        cls=lazy_group({"audit": "grse_graph.cli.audit_cmd"}),
    )
    skills.command("validate")(validate)
    skills.command("show")(show)
    skills.command("diff")(diff)
    skills.command("export")(export)
    app.add_typer(skills, name="skills")
