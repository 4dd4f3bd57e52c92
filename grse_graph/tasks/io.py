"""Reading task data files with one-line errors that name the path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grse_graph.errors import TaskError


def read_json(path: Path, *, task_name: str) -> Any:
    """Parse a JSON file; `TaskError` naming the path if it is missing or not valid JSON."""
    if not path.exists():
        raise TaskError(f"{task_name}: data file not found: {path}")
    if not path.is_file():
        raise TaskError(f"{task_name}: not a file: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{task_name}: cannot read {path}: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskError(
            f"{task_name}: {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg})"
        ) from exc


def resolve_data_file(data: Path | None, default_name: str, *, task_name: str) -> Path:
    """`data` itself, or `data/default_name` when `data` is a directory."""
    if data is None:
        raise TaskError(f"task '{task_name}' needs a data path (--data PATH to {default_name})")
    path = Path(data)
    if path.is_dir():
        return path / default_name
    return path
