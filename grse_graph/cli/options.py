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

CONFIG_HELP = (
    "The grse TOML file: model roles ([actor], [critic], [optimizer], [engine]) and, for "
    "grse train, the [train] table."
)
ConfigOption = Annotated[Path | None, typer.Option("--config", help=CONFIG_HELP)]
JSON_HELP = "Print the result as one JSON document on stdout (messages go to stderr)."
JsonOption = Annotated[bool, typer.Option("--json", help=JSON_HELP)]


def report_console(as_json: bool) -> Console:
    """Where a command's messages go: stderr when stdout carries the JSON result."""
    return Console(stderr=True) if as_json else Console()


def print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    """Write a result to stdout as one JSON document."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


__all__ = ["CONFIG_HELP", "ConfigOption", "JsonOption", "print_json", "report_console"]
