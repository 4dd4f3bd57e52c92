"""Task-aware defaults of a training run: the paper's protocol per task and LoCoMo category.

`with_protocol_defaults` fills the `TrainConfig` values that depend on the task (batch size,
library limit, training top-k, training and validation decoding) into a training table where
the TOML file and the flags give none, so an explicit value always wins. Every entry point
(`grse train`, Studio's training graph, the demo's `learning_config`, the Python API) reaches
it through `grse_graph.training.config.protocol_train_config`. Where the paper gives no value
(HotpotQA batch size and library limit appear only in its Table 8), the choice is recorded in
docs/PROTOCOL.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.llm.provider import SamplingSettings

ValidationDecoding = Literal["training", "greedy"]
TrainingDecoding = Literal["sampled", "greedy"]
MIXED_CATEGORIES = (None, "mixed", "all")
GREEDY_TRAINING: dict[str, frozenset[str]] = {"locomo": frozenset({"maskills"})}
"""Per task, the methods whose actor decodes greedily in training too: MASkills' released
runner, which the paper follows on LoCoMo (App. A), never samples."""


class ProtocolDefaults(BaseModel):
    """The protocol values of one task (and LoCoMo category).

    `validation_decoding` "training" samples validation with the training parameters (HotpotQA,
    App. A); "greedy" decodes it greedily (LoCoMo). `training_decoding` "sampled" samples the
    training rollouts (temperature 1.0, top-p 0.95, the family's top-k); "greedy" decodes them
    greedily.
    """

    model_config = ConfigDict(frozen=True)

    batch_size: int = Field(ge=1)
    library_limit: int = Field(ge=1)
    validation_decoding: ValidationDecoding
    training_decoding: TrainingDecoding = "sampled"


# LoCoMo per category: 24 questions per iteration, L = 4, greedy validation (§5, App. A).
_LOCOMO = ProtocolDefaults(batch_size=24, library_limit=4, validation_decoding="greedy")
# LoCoMo mixed (the ablations of §5.5): 32 questions per iteration over all four categories.
_LOCOMO_MIXED = _LOCOMO.model_copy(update={"batch_size": 32})
# HotpotQA: validation sampled with the training parameters (App. A). Batch and L are not in
# the text; 20 questions x T=5 iterations visit the 100 training questions once.
_HOTPOTQA = ProtocolDefaults(batch_size=20, library_limit=4, validation_decoding="training")
# Tasks without a paper protocol keep the general defaults of `TrainConfig`.
_GENERAL = ProtocolDefaults(batch_size=24, library_limit=4, validation_decoding="greedy")


def protocol_defaults(
    task: str, category: str | None = None, method: str = "grse"
) -> ProtocolDefaults:
    """The protocol values of a task name, (LoCoMo) category and method name."""
    if task == "locomo":
        found = _LOCOMO_MIXED if category in MIXED_CATEGORIES else _LOCOMO
    elif task == "hotpotqa":
        found = _HOTPOTQA
    else:
        found = _GENERAL
    if method in GREEDY_TRAINING.get(task, frozenset()):
        return found.model_copy(update={"training_decoding": "greedy"})
    return found


def method_name(section: object) -> str:
    """The method a training table's `method` value names (a name, a mapping or a settings
    model; absent: GRSE)."""
    if section is None:
        return "grse"
    if isinstance(section, str):
        return section
    if isinstance(section, Mapping):
        return str(section.get("name", "grse"))
    return str(getattr(section, "name", "grse"))


def with_protocol_defaults(table: Mapping[str, Any], *, training_top_k: int) -> dict[str, Any]:
    """A training table (TOML and flags, before validation) with the task's protocol values
    filled in where it gives none: batch size, library limit, training sampling with the model
    family's top-k (greedy for a method whose runner never samples), and validation sampling
    (greedy, or the run's training sampling).

    Needs `table["task"]`; `table.get("category")` picks the LoCoMo setting and
    `table.get("method")` the method's decoding.
    """
    protocol = protocol_defaults(
        str(table["task"]), table.get("category"), method_name(table.get("method"))
    )
    filled = dict(table)
    filled.setdefault("batch_size", protocol.batch_size)
    filled.setdefault("library_limit", protocol.library_limit)
    filled.setdefault(
        "training_sampling",
        SamplingSettings.greedy()
        if protocol.training_decoding == "greedy"
        else SamplingSettings.training(top_k=training_top_k),
    )
    if "validation_sampling" not in filled:
        filled["validation_sampling"] = (
            filled["training_sampling"]
            if protocol.validation_decoding == "training"
            else SamplingSettings.greedy()
        )
    return filled
