"""`load_task(name, data, **options)`: the one way to get a built-in task."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grse_graph.errors import TaskError
from grse_graph.tasks.base import Task
from grse_graph.tasks.demo import load_demo
from grse_graph.tasks.hotpotqa import load_hotpotqa
from grse_graph.tasks.jsonl import load_jsonl
from grse_graph.tasks.locomo import load_locomo


def _loaders() -> dict[str, Callable[..., Task]]:
    return {
        "hotpotqa": load_hotpotqa,
        "locomo": load_locomo,
        "demo": load_demo,
        "jsonl": load_jsonl,
    }


TASK_NAMES: tuple[str, ...] = ("hotpotqa", "locomo", "demo", "jsonl")


def task_options(name: str) -> list[str]:
    """The option names `load_task` accepts for a task."""
    loader = _loader(name)
    return [p for p in inspect.signature(loader).parameters if p not in ("data", "loader")]


def _loader(name: str) -> Callable[..., Task]:
    loaders = _loaders()
    if name not in loaders:
        raise TaskError(f"unknown task '{name}' (known: {', '.join(TASK_NAMES)})")
    return loaders[name]


def load_task(
    name: str, data: Path | str | None = None, *, category: str | None = None, **options: Any
) -> Task:
    """Load a built-in task by name.

    `data` is the task's data file or folder (`hotpotqa`: the distractor JSON, or None for the
    Hugging Face route; `locomo`: `locomo10.json` or its folder; `demo`: None for the bundled
    data; `jsonl`: the JSONL file). `category` (the `--category` of the commands; None: all)
    keeps the questions of one category, for tasks that have categories to choose (`locomo`:
    multi-hop, temporal, open-domain, single-hop or mixed); another task refuses it with a
    `TaskError`. `options` are the keyword options of the task's loader (see
    `task_options(name)`); an unknown option is a `TaskError`.
    """
    if category is not None:
        if "category" not in task_options(name):
            raise TaskError(f"task '{name}' has no categories to choose (--category {category})")
        options = {**options, "category": category}
    loader = _loader(name)
    allowed = task_options(name)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TaskError(
            f"task '{name}' has no option {', '.join(unknown)} (options: {', '.join(allowed)})"
        )
    return loader(Path(data) if data is not None else None, **options)
