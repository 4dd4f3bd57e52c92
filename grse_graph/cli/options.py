"""Options every `grse` command spells the same way, and the `--json` output convention.

`--config` always names the one grse TOML file: the model roles (`[actor]`, `[critic]`,
`[optimizer]`, `[engine]`) and, read by `grse train` only, its `[train]` table. `--json` makes a
reporting command print one JSON document on stdout and send everything meant for people
(progress, tables, engine messages) to stderr, so `grse eval ... --json | jq` works.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from typer.core import TyperCommand

from grse_graph.output import output_console

CONFIG_HELP = (
    "The grse TOML file: model roles ([actor], [critic], [optimizer], [engine]) and, for "
    "grse train, the [train] table."
)
ConfigOption = Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)]
JSON_HELP = "Print the result as one JSON document on stdout (messages go to stderr)."
JsonOption = Annotated[bool, typer.Option("--json", help=JSON_HELP)]


def report_console(as_json: bool) -> Console:
    """Where a command's messages go: stderr when stdout carries the JSON result."""
    return output_console(stderr=as_json)


def print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    """Write a result to stdout as one JSON document."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


class PanelledCommand(TyperCommand):
    """A command whose `--help` lists its options in sections named by their `rich_help_panel`
    (Typer's own grouping, which only its Rich help draws: this CLI shows help as written,
    `rich_markup_mode=None`, so brackets stay text). Options without a panel go under
    "Options", after the panels in the order their first option is declared."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        # Any: newer Typer vendors click privately (typer._click), older Typer uses click
        # itself; both values are only handed back to their own methods here.
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            default = "Arguments" if param.param_type_name == "argument" else "Options"
            panel = getattr(param, "rich_help_panel", None) or default
            sections.setdefault(panel, []).append(record)
        # The unpanelled options (--help among them) come last, as in Typer's Rich help.
        ordered = sorted(sections.items(), key=lambda item: item[0] == "Options")
        for panel, records in ordered:
            with formatter.section(panel):
                formatter.write_dl(records)
