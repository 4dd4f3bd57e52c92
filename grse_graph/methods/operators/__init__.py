"""Evolution operators shared by the credit methods: refine, induce, consolidate, prune.

`evolve` runs the operators the `OperatorSchedule` selects for an iteration and returns candidate
libraries plus an `OperatorRecord` per action (what changed, and the evidence why).
"""

from grse_graph.methods.operators.anchored import apply_anchored_edits
from grse_graph.methods.operators.base import OperatorContext, OperatorSettings
from grse_graph.methods.operators.consolidate import consolidate, redundant_groups
from grse_graph.methods.operators.evolve import evolve, record_utilities
from grse_graph.methods.operators.induce import induce, induce_candidates
from grse_graph.methods.operators.prune import prune, prune_candidates
from grse_graph.methods.operators.refine import refine, refine_targets
from grse_graph.methods.operators.schedule import OPERATOR_ORDER, OperatorSchedule

__all__ = [
    "OPERATOR_ORDER",
    "OperatorContext",
    "OperatorSchedule",
    "OperatorSettings",
    "apply_anchored_edits",
    "consolidate",
    "evolve",
    "induce",
    "induce_candidates",
    "prune",
    "prune_candidates",
    "record_utilities",
    "redundant_groups",
    "refine",
    "refine_targets",
]
