"""Training: the loop as a resumable LangGraph StateGraph (any credit method), its run folder and
its report.

`build_training_graph(TrainingDeps(...))` returns the uncompiled loop; `compile_training_graph`
compiles it (with or without a checkpointer); `run_training` runs it with SQLite checkpoints in
the run folder, resuming and answering review interrupts. `RunFolder` reads every artifact back.
"""

from .config import TrainConfig
from .context import TrainingContext, TrainingDeps
from .graph import build_training_graph, compile_training_graph, training_run_config
from .progress import ProgressEvent
from .records import (
    AggregateRecord,
    CandidateRecord,
    GateRecord,
    MethodStateRecord,
    OperatorLine,
    ReviewRecord,
    RolloutRecord,
    ValidationRecord,
)
from .report import write_report
from .review import ReviewAnswer, ReviewRequest
from .run_folder import RunFolder
from .runner import IterationScores, TrainResult, run_training
from .state import TrainingState

__all__ = [
    "AggregateRecord",
    "CandidateRecord",
    "GateRecord",
    "IterationScores",
    "MethodStateRecord",
    "OperatorLine",
    "ProgressEvent",
    "ReviewAnswer",
    "ReviewRecord",
    "ReviewRequest",
    "RolloutRecord",
    "RunFolder",
    "TrainConfig",
    "TrainResult",
    "TrainingContext",
    "TrainingDeps",
    "TrainingState",
    "ValidationRecord",
    "build_training_graph",
    "compile_training_graph",
    "run_training",
    "training_run_config",
    "write_report",
]
