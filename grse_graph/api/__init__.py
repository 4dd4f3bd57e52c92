"""The one-call Python API: `train`, `evaluate`, `load_pack` and `export_pack`, on the same
session, training, evaluation and export code as `grse train`, `grse eval` and
`grse skills export` (re-exported by `grse_graph`)."""

from grse_graph.training.runner import IterationScores, TrainResult

from .config import ConfigInput, MethodChoice
from .evaluator import evaluate
from .inputs import LibrariesInput, LLMInput, TaskInput, load_pack
from .shipping import PackSource, export_pack
from .trainer import train

__all__ = [
    "ConfigInput",
    "IterationScores",
    "LLMInput",
    "LibrariesInput",
    "MethodChoice",
    "PackSource",
    "TaskInput",
    "TrainResult",
    "evaluate",
    "export_pack",
    "load_pack",
    "train",
]
