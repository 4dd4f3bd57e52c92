"""The evaluation folder on disk: `run.json`, append-only `predictions.jsonl`, `summary.json`."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from grse_graph.durable import append_jsonl, atomic_write_text, read_jsonl
from grse_graph.errors import ConfigError
from grse_graph.validation_text import describe_validation_error

from .records import EvalSummary, PredictionRecord, RunConfig

RUN_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"
SUMMARY_FILE = "summary.json"


class EvalFolder:
    """One evaluation output folder. Predictions are appended as questions finish, so a crash
    loses at most the line being written (`grse_graph.durable`: reading drops a torn last line,
    the next append cuts it off)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.predictions_path = path / PREDICTIONS_FILE
        self.summary_path = path / SUMMARY_FILE
        self.run_path = path / RUN_FILE

    def open_run(self, config: RunConfig) -> None:
        """Create the folder and `run.json`, or check that an existing run is the same run."""
        self.path.mkdir(parents=True, exist_ok=True)
        if not self.run_path.exists():
            atomic_write_text(self.run_path, config.model_dump_json(indent=2) + "\n")
            return
        try:
            existing = RunConfig.model_validate_json(self.run_path.read_text(encoding="utf-8"))
        except ValidationError as error:
            raise ConfigError(f"{self.run_path}: {describe_validation_error(error)}") from None
        for field in ("task", "split", "method", "data", "categories", "model", "method_config"):
            old, new = getattr(existing, field), getattr(config, field)
            if old != new:
                raise ConfigError(
                    f"{self.run_path}: field {field} is {json.dumps(old, sort_keys=True)} but "
                    f"this run asks for {json.dumps(new, sort_keys=True)}; "
                    "use another output folder to start a different run"
                )

    def read_predictions(self) -> dict[str, PredictionRecord]:
        """Finished records by question id (a later line for the same id wins).

        A torn last line (a kill mid-write) is dropped; a bad line elsewhere is an error naming
        its number. Reading never changes the file.
        """
        found = read_jsonl(self.predictions_path, PredictionRecord, error=ConfigError)
        return {record.id: record for record in found.records}

    def append(self, record: PredictionRecord) -> None:
        """Append one record as one line and flush it to disk."""
        append_jsonl(self.predictions_path, record.model_dump_json())

    def read_elapsed_s(self) -> float:
        """Wall time the earlier sessions of this folder recorded in `summary.json` (0 if none)."""
        if not self.summary_path.exists():
            return 0.0
        try:
            return EvalSummary.model_validate_json(
                self.summary_path.read_text(encoding="utf-8")
            ).elapsed_s
        except ValidationError as error:
            raise ConfigError(
                f"{self.summary_path}: not a summary ({describe_validation_error(error)}); "
                "delete it to rebuild it from predictions.jsonl"
            ) from None

    def write_summary(self, summary: EvalSummary) -> None:
        """Write `summary.json` (replacing any earlier one atomically)."""
        atomic_write_text(self.summary_path, summary.model_dump_json(indent=2) + "\n")
