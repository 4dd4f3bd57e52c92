"""Evolution operators shared by the credit methods: refine, induce, consolidate, prune.

`evolve` runs the operators the `OperatorSchedule` selects for an iteration (looked up by name in
`OPERATORS`, the registry of `Operator`s) and returns candidate libraries plus an
`OperatorRecord` per action (what changed, and the evidence why). Their values live in `schema`.
Drafted bodies pass the memorisation check (`memorisation`) against the run's training inputs;
`guidance` holds the task (LoCoMo category) guidance the operator prompts carry.
"""

from grse_graph.methods.operators.anchored import apply_anchored_edits
from grse_graph.methods.operators.base import OperatorContext, OperatorSettings
from grse_graph.methods.operators.consolidate import consolidate, redundant_groups
from grse_graph.methods.operators.evolve import evolve
from grse_graph.methods.operators.guidance import OPERATOR_GUIDANCE, operator_guidance
from grse_graph.methods.operators.induce import induce, induce_candidates
from grse_graph.methods.operators.memorisation import (
    MemorisationCheck,
    MemorisationFinding,
    MemorisationSettings,
    TrainingInputs,
    training_inputs,
)
from grse_graph.methods.operators.prune import prune, prune_candidates
from grse_graph.methods.operators.refine import refine, refine_targets
from grse_graph.methods.operators.registry import OPERATORS, Operator, prune_operator
from grse_graph.methods.operators.schedule import OPERATOR_ORDER, OperatorSchedule

__all__ = [
    "OPERATORS",
    "OPERATOR_GUIDANCE",
    "OPERATOR_ORDER",
    "MemorisationCheck",
    "MemorisationFinding",
    "MemorisationSettings",
    "Operator",
    "OperatorContext",
    "OperatorSchedule",
    "OperatorSettings",
    "TrainingInputs",
    "apply_anchored_edits",
    "consolidate",
    "evolve",
    "induce",
    "induce_candidates",
    "operator_guidance",
    "prune",
    "prune_candidates",
    "prune_operator",
    "redundant_groups",
    "refine",
    "refine_targets",
    "training_inputs",
]
