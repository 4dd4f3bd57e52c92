"""The one-call Python API: `train`, `evaluate` and `load_pack`, on the same session, training
and evaluation code as `grse train` and `grse eval` (re-exported by `grse_graph`)."""

from grse_graph.training.runner import IterationScores, TrainResult

from .config import ConfigInput, MethodChoice
from .evaluator import evaluate
from .inputs import LibrariesInput, LLMInput, TaskInput, load_pack
from .trainer import train

__all__ = [
    "ConfigInput",
    "IterationScores",
    "LLMInput",
    "LibrariesInput",
    "MethodChoice",
    "TaskInput",
    "TrainResult",
    "evaluate",
    "load_pack",
    "train",
]
