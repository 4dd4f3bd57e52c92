"""Task-aware defaults of a training run: the paper's protocol per task and LoCoMo category.

`with_protocol_defaults` fills the `TrainConfig` values that depend on the task (batch size,
library limit, training top-k, validation decoding) into a training table where the TOML file
and the flags give none, so an explicit value always wins. Where the paper gives no value
(HotpotQA batch size and library limit appear only in its Table 8), the choice is recorded in
docs/PROTOCOL.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.llm.provider import SamplingSettings

ValidationDecoding = Literal["training", "greedy"]
MIXED_CATEGORIES = (None, "mixed", "all")


class ProtocolDefaults(BaseModel):
    """The protocol values of one task (and LoCoMo category).

    `validation_decoding` "training" samples validation with the training parameters (HotpotQA,
    App. A); "greedy" decodes it greedily (LoCoMo).
    """

    model_config = ConfigDict(frozen=True)

    batch_size: int = Field(ge=1)
    library_limit: int = Field(ge=1)
    validation_decoding: ValidationDecoding


# LoCoMo per category: 24 questions per iteration, L = 4, greedy validation (§5, App. A).
_LOCOMO = ProtocolDefaults(batch_size=24, library_limit=4, validation_decoding="greedy")
# LoCoMo mixed (the ablations of §5.5): 32 questions per iteration over all four categories.
_LOCOMO_MIXED = _LOCOMO.model_copy(update={"batch_size": 32})
# HotpotQA: validation sampled with the training parameters (App. A). Batch and L are not in
# the text; 20 questions x T=5 iterations visit the 100 training questions once.
_HOTPOTQA = ProtocolDefaults(batch_size=20, library_limit=4, validation_decoding="training")
# Tasks without a paper protocol keep the general defaults of `TrainConfig`.
_GENERAL = ProtocolDefaults(batch_size=24, library_limit=4, validation_decoding="greedy")


def protocol_defaults(task: str, category: str | None = None) -> ProtocolDefaults:
    """The protocol values of a task name and (LoCoMo) category."""
    if task == "locomo":
        return _LOCOMO_MIXED if category in MIXED_CATEGORIES else _LOCOMO
    if task == "hotpotqa":
        return _HOTPOTQA
    return _GENERAL


def with_protocol_defaults(table: Mapping[str, Any], *, training_top_k: int) -> dict[str, Any]:
    """A training table (TOML and flags, before validation) with the task's protocol values
    filled in where it gives none: batch size, library limit, training sampling with the model
    family's top-k, and validation sampling (greedy, or the run's training sampling).

    Needs `table["task"]`; `table.get("category")` picks the LoCoMo setting.
    """
    protocol = protocol_defaults(str(table["task"]), table.get("category"))
    filled = dict(table)
    filled.setdefault("batch_size", protocol.batch_size)
    filled.setdefault("library_limit", protocol.library_limit)
    filled.setdefault("training_sampling", SamplingSettings.training(top_k=training_top_k))
    if "validation_sampling" not in filled:
        filled["validation_sampling"] = (
            filled["training_sampling"]
            if protocol.validation_decoding == "training"
            else SamplingSettings.greedy()
        )
    return filled
