"""The console a command prints its results on."""

from __future__ import annotations

import sys

from rich.console import Console

LOG_WIDTH = 4000
"""Columns for output that is not a terminal (a log file, a pipe): wide enough that no table
cell wraps. A table is only as wide as its content, so this bounds nothing in practice."""


def output_console(*, stderr: bool = False) -> Console:
    """The terminal's width on a terminal; elsewhere `LOG_WIDTH`, so tables are printed whole
    instead of wrapped cell by cell at rich's default of 80 columns."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=LOG_WIDTH)
