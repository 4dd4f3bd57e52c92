"""Evolution operators shared by the credit methods: refine, induce, consolidate, prune.

`evolve` runs the operators the `OperatorSchedule` selects for an iteration (looked up by name in
`OPERATORS`, the registry of `Operator`s) and returns candidate libraries plus an
`OperatorRecord` per action (what changed, and the evidence why). Their values live in `schema`.
Drafted bodies pass the memorisation check (`memorisation`) against the run's training inputs;
`guidance` holds the task (LoCoMo category) guidance the operator prompts carry.
"""

from grse_graph.methods.operators.base import OperatorContext, OperatorSettings
from grse_graph.methods.operators.consolidate import consolidate
from grse_graph.methods.operators.evolve import evolve
from grse_graph.methods.operators.guidance import OPERATOR_GUIDANCE, operator_guidance
from grse_graph.methods.operators.induce import induce
from grse_graph.methods.operators.memorisation import (
    MemorisationCheck,
    MemorisationSettings,
    TrainingInputs,
    training_inputs,
)
from grse_graph.methods.operators.prune import prune
from grse_graph.methods.operators.refine import refine
from grse_graph.methods.operators.registry import OPERATORS
from grse_graph.methods.operators.schedule import OperatorSchedule

__all__ = [
    "OPERATORS",
    "OPERATOR_GUIDANCE",
    "MemorisationCheck",
    "MemorisationSettings",
    "OperatorContext",
    "OperatorSchedule",
    "OperatorSettings",
    "TrainingInputs",
    "consolidate",
    "evolve",
    "induce",
    "operator_guidance",
    "prune",
    "refine",
    "training_inputs",
]
