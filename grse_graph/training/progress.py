"""Progress events the training graph emits to an optional callback (the CLI's live display)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

# The stages in the order a training run goes through them ("probe": the counterfactual skill
# probes between the critic and the aggregate, one unit per team run).
Stage = Literal[
    "setup",
    "sample_batch",
    "rollouts",
    "critic",
    "probe",
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
    `iteration_done` and `run_done` also finish the stage under way, whether or not it reported
    its units one by one.
    """

    kind: Literal["stage_started", "unit_done", "iteration_done", "run_done"]
    iteration: int
    stage: Stage
    total: int = 0
    unit_id: str | None = None
    reused: bool = False
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]
