"""Evaluation: resumable, concurrent, scored runs of a team or a baseline over a task split."""

from .answerer import QuestionAnswerer, TeamAnswerer
from .records import CategoryAverage, EvalSummary, GroupSummary, PredictionRecord, RunConfig
from .runner import answer_question, rollout_id_for, run_evaluation
from .store import PREDICTIONS_FILE, RUN_FILE, SUMMARY_FILE, EvalFolder
from .summary import summarize, summary_table

__all__ = [
    "PREDICTIONS_FILE",
    "RUN_FILE",
    "SUMMARY_FILE",
    "CategoryAverage",
    "EvalFolder",
    "EvalSummary",
    "GroupSummary",
    "PredictionRecord",
    "QuestionAnswerer",
    "RunConfig",
    "TeamAnswerer",
    "answer_question",
    "rollout_id_for",
    "run_evaluation",
    "summarize",
    "summary_table",
]
