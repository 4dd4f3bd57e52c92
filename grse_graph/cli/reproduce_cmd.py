"""`grse reproduce TABLE [OPTIONS]`: the same code as `python evals/<table script> OPTIONS`."""

from __future__ import annotations

import typer

from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import main as reproduce_main

REPRODUCE_HELP = (
    "Reproduce one table of the GRSE paper: "
    + ", ".join(f"{name} ({table.script})" for name, table in TABLES.items())
    + ". The options follow the table and are passed to it unchanged (see `grse reproduce "
    "TABLE --help`): --config per actor, --seeds, --smoke (invented fixtures shipped in the "
    "package), --limit, --out, --dry-run, --jobs, --additions (the project's additions on; "
    "default the paper's mode), --data-hotpotqa PATH / --data-locomo PATH (or $GRSE_HOTPOTQA "
    "/ $GRSE_LOCOMO; HotpotQA otherwise loads through `datasets` with the paper's splits)."
)


def reproduce(
    ctx: typer.Context, table: str | None = typer.Argument(None, help="table name")
) -> None:
    """Run the table's script with the remaining options (`--help` after the table name is
    the table's own help)."""
    if table is None or table in ("-h", "--help"):
        typer.echo(REPRODUCE_HELP)
        raise typer.Exit(0 if table is not None or "--help" in ctx.args else 1)
    if table not in TABLES:
        known = ", ".join(TABLES)
        typer.echo(f"error: unknown table {table!r} (known: {known})", err=True)
        raise typer.Exit(1)
    raise typer.Exit(reproduce_main(table, list(ctx.args)))


def register(app: typer.Typer) -> None:
    """Register the `reproduce` command on the app."""
    app.command(
        "reproduce",
        help=REPRODUCE_HELP,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )(reproduce)
