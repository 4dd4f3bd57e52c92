"""The training loop's LangGraph state and the inputs of its Send tasks."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

RESET = "__reset__"


def units(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer of finished unit ids: appends; a list starting with RESET starts over."""
    if right and right[0] == RESET:
        return list(right[1:])
    return [*(left or []), *(right or [])]


class TrainingState(TypedDict, total=False):
    """The loop's state: small, serialisable values only.

    `libraries` maps each agent to its current library folder (relative to the run folder) and
    `library_hashes` to its content hash; `candidates` likewise for the agents whose library
    the evolve stage changed in this iteration. `credit_units` holds the credit units the
    method chose for the batch (decided once, read by the router).
    """

    iteration: int
    libraries: dict[str, str]
    library_hashes: dict[str, str]
    batch: list[str]
    credit_units: list[dict[str, Any]]
    candidates: dict[str, str]
    candidate_hashes: dict[str, str]
    rollouts_done: Annotated[list[str], units]
    critiques_done: Annotated[list[str], units]
    validations_done: Annotated[list[str], units]
    scores: list[dict[str, Any]]


class RolloutUnit(TypedDict):
    """The input of one `rollout` Send task."""

    iteration: int
    question_id: str
    group_index: int
    seed: int
    unit_id: str
    libraries: dict[str, str]
    library_hashes: dict[str, str]


class CriticUnit(TypedDict):
    """The input of one `critic` Send task (one credit unit of the method)."""

    iteration: int
    question_id: str
    unit_id: str
    rollout_ids: list[str]
    libraries: dict[str, str]


class ValidationUnit(TypedDict):
    """The input of one `validate` Send task."""

    iteration: int
    variant: str
    variant_hash: str
    question_id: str
    repeat: int
    unit_id: str
    libraries: dict[str, str]
