"""Single-model baselines on the evaluation harness: IO, CoT, CoT-SC, Self-Refine, full-context."""

from .methods import (
    BASELINES,
    Baseline,
    BaselineName,
    CoTBaseline,
    CoTSCBaseline,
    FullContextBaseline,
    IOBaseline,
    SelfRefineBaseline,
    make_baseline,
)
from .run import run_baseline
from .vote import feedback_says_correct, majority_vote, normalize_vote

__all__ = [
    "BASELINES",
    "Baseline",
    "BaselineName",
    "CoTBaseline",
    "CoTSCBaseline",
    "FullContextBaseline",
    "IOBaseline",
    "SelfRefineBaseline",
    "feedback_says_correct",
    "majority_vote",
    "make_baseline",
    "normalize_vote",
    "run_baseline",
]
