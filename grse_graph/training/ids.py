"""Deterministic unit ids, seeds and library-variant hashes, and the iteration's question sets.

A unit id names one piece of work (a rollout, an opening, a validation execution) so the run
folder can tell whether it is finished; seeds derive from the id, so a resumed or repeated run
samples exactly what the first one did.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from grse_graph.errors import GrseError
from grse_graph.llm.provider import SamplingSettings
from grse_graph.tasks.base import Task, TaskQuestion

from .config import TrainConfig


def rollout_unit_id(iteration: int, question_id: str, group_index: int) -> str:
    """Id of training rollout g of a question in an iteration."""
    return f"it{iteration}-{question_id}-g{group_index}"


def opening_unit_id(iteration: int, question_id: str) -> str:
    """Id of the first agent's n=G call for one question's group in an iteration."""
    return f"it{iteration}-{question_id}-opening"


def validation_unit_id(variant_hash: str, question_id: str, repeat: int) -> str:
    """Id of one validation execution. Keyed by the libraries' content, not the iteration:
    the same libraries on the same question and repeat are the same execution."""
    return f"val-{variant_hash[:16]}-{question_id}-h{repeat}"


def validation_seed_id(question_id: str, repeat: int) -> str:
    """What a sampled validation execution's seed is derived from: the question and repeat
    only, so the base and every candidate library of every iteration share their seeds and a
    score difference is not sampling noise."""
    return f"validation-{question_id}-h{repeat}"


def derive_seed(base: int, unit_id: str) -> int:
    """A distinct, reproducible sampling seed per unit."""
    digest = hashlib.sha256(f"{base}:{unit_id}".encode()).hexdigest()
    return int(digest[:8], 16)


def variant_hash(
    hashes: Mapping[str, str], sampling: SamplingSettings, state: BaseModel | None = None
) -> str:
    """Content hash of a library combination plus the decoding settings it is scored with and,
    for a method with state, the state that chooses its team (so the same libraries under
    another state are another execution)."""
    text = "|".join(f"{a}={h}" for a, h in sorted(hashes.items()))
    text += "|" + sampling.model_dump_json(exclude={"seed"})
    if state is not None:
        text += "|state=" + hashlib.sha256(state.model_dump_json().encode()).hexdigest()
    return hashlib.sha256(text.encode()).hexdigest()


def train_questions(task: Task) -> list[TaskQuestion]:
    """The train split (`GrseError` naming the task if it is empty)."""
    train = list(task.split("train"))
    if not train:
        raise GrseError(f"task {task.name}: the train split is empty")
    return train


def validation_ids(task: Task, config: TrainConfig) -> list[str]:
    """The validation set V: the first `validation_size` questions of the validation split."""
    questions = list(task.split("validation"))
    if not questions:
        raise GrseError(f"task {task.name}: the validation split is empty")
    size = config.validation_size or len(questions)
    return [q.id for q in questions[:size]]


def question_order(batch: Sequence[str], group_size: int) -> list[tuple[str, int]]:
    """The (question, g) order rollouts are queued in: each group contiguous."""
    return [(qid, g) for qid in batch for g in range(group_size)]
