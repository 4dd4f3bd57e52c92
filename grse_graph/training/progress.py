"""Progress events the training graph emits to an optional callback (the CLI's live display)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

Stage = Literal[
    "setup",
    "sample_batch",
    "rollouts",
    "critic",
    "aggregate",
    "evolve",
    "review",
    "validation",
    "commit",
    "report",
]


class ProgressEvent(BaseModel):
    """`stage_started` carries the number of units of the stage; `unit_done` one finished unit.

    `reused` is True when a unit was found finished in the run folder and not paid for again.
    """

    kind: Literal["stage_started", "unit_done", "iteration_done", "run_done"]
    iteration: int
    stage: Stage
    total: int = 0
    unit_id: str | None = None
    reused: bool = False
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]
