"""The `grse` command line. Each sub-module registers its commands on the one Typer app."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from grse_graph.errors import GrseError

from . import doctor_cmd, eval_cmd, score_cmd, serve_cmd, skills_cmd, train_cmd


def build_app() -> typer.Typer:
    """The Typer application with every command group registered."""
    app = typer.Typer(
        name="grse",
        help="Group-Relative Skill Evolution for LangGraph agent teams.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    for module in (serve_cmd, skills_cmd, doctor_cmd, score_cmd, eval_cmd, train_cmd):
        module.register(app)
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
