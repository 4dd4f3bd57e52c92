"""The `grse` command line. Each sub-module registers its commands (`register(app)`) and is
imported when one of its commands runs or is listed (`COMMAND_MODULES`, `lazy.lazy_group`)."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from grse_graph import __version__
from grse_graph.errors import GrseError
from grse_graph.llm.config import load_config

from .environment import unknown_variable_warnings
from .lazy import lazy_group

COMMAND_MODULES = {
    "serve": "grse_graph.cli.serve_cmd",
    "skills": "grse_graph.cli.skills_cmd",
    "doctor": "grse_graph.cli.doctor_cmd",
    "score": "grse_graph.cli.score_cmd",
    "eval": "grse_graph.cli.eval_cmd",
    "baseline": "grse_graph.cli.eval_cmd",
    "train": "grse_graph.cli.train_cmd",
    "demo": "grse_graph.cli.train_cmd",
    "reproduce": "grse_graph.cli.reproduce_cmd",
}
"""Each top-level command and the module whose ``register(app)`` defines it, in help order."""


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"grse {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Group-Relative Skill Evolution for LangGraph agent teams."""
    try:
        config = load_config()
    except GrseError:
        config = None  # the command itself reports the bad value
    for line in unknown_variable_warnings(os.environ, config):
        typer.echo(line, err=True)


def build_app() -> typer.Typer:
    """The Typer application with every command of `COMMAND_MODULES`, each module imported
    when one of its commands is run or listed.

    Help text is shown as written (`rich_markup_mode=None`), so `[actor]` in a help string is
    not taken for Rich markup; shell completion comes from Typer (`--install-completion`).
    """
    app = typer.Typer(
        name="grse",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=True,
        rich_markup_mode=None,
        cls=lazy_group(COMMAND_MODULES),
    )
    app.callback()(_root)
    return app


def main() -> None:
    """Console-script entry point: user-facing errors become one line on stderr and exit 1."""
    try:
        build_app()()
    except GrseError as error:
        Console(stderr=True).print(
            f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True
        )
        sys.exit(1)
