"""The training graph's node bodies as importable units.

Each stage is a class constructed from a `TrainingContext` whose methods are the nodes and
routers of that stage; `grse_graph.training.graph.build_training_graph` only wires them.
"""

from .credit import CreditStage
from .evolution import EvolutionStage
from .probe import ProbeStage
from .rollouts import RolloutStage
from .setup import SetupStage
from .validation import ValidationStage

__all__ = [
    "CreditStage",
    "EvolutionStage",
    "ProbeStage",
    "RolloutStage",
    "SetupStage",
    "ValidationStage",
]
