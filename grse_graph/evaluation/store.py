"""The evaluation folder on disk: `run.json`, append-only `predictions.jsonl`, `summary.json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from grse_graph.errors import ConfigError

from .records import EvalSummary, PredictionRecord, RunConfig

RUN_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"
SUMMARY_FILE = "summary.json"


class EvalFolder:
    """One evaluation output folder. Predictions are appended as questions finish, so a crash
    loses at most the line being written; reading drops a truncated last line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def predictions_path(self) -> Path:
        """`predictions.jsonl` in the folder."""
        return self.path / PREDICTIONS_FILE

    @property
    def summary_path(self) -> Path:
        """`summary.json` in the folder."""
        return self.path / SUMMARY_FILE

    @property
    def run_path(self) -> Path:
        """`run.json` in the folder."""
        return self.path / RUN_FILE

    def open_run(self, config: RunConfig) -> None:
        """Create the folder and `run.json`, or check that an existing run is the same run."""
        self.path.mkdir(parents=True, exist_ok=True)
        if not self.run_path.exists():
            self.run_path.write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")
            return
        try:
            existing = RunConfig.model_validate_json(self.run_path.read_text(encoding="utf-8"))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise ConfigError(f"{self.run_path}: field {field}: {first['msg']}") from None
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

        A last line that does not parse (a crash mid-write) is dropped and cut from the file so
        later appends start on a clean line; a bad line elsewhere is an error naming its number.
        """
        if not self.predictions_path.exists():
            return {}
        raw = self.predictions_path.read_bytes()
        lines = raw.split(b"\n")
        records: dict[str, PredictionRecord] = {}
        good_bytes = 0
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                good_bytes += len(line) + 1
                continue
            try:
                record = PredictionRecord.model_validate_json(line)
            except ValidationError as error:
                is_last = all(not rest.strip() for rest in lines[number:])
                if is_last:
                    self._truncate(good_bytes)
                    break
                raise ConfigError(
                    f"{self.predictions_path}:{number}: not a prediction record "
                    f"({error.errors()[0]['msg']})"
                ) from None
            records[record.id] = record
            good_bytes += len(line) + 1
        else:
            if raw and not raw.endswith(b"\n"):
                # The record parsed but its newline was lost: end the line before appending.
                with self.predictions_path.open("ab") as handle:
                    handle.write(b"\n")
        return records

    def _truncate(self, size: int) -> None:
        with self.predictions_path.open("r+b") as handle:
            handle.truncate(min(size, os.path.getsize(self.predictions_path)))

    def append(self, record: PredictionRecord) -> None:
        """Append one record as one line and flush it to disk."""
        with self.predictions_path.open("a", encoding="utf-8") as handle:
            handle.write(record.model_dump_json() + "\n")
            handle.flush()
            os.fsync(handle.fileno())

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
                f"{self.summary_path}: not a summary ({error.errors()[0]['msg']}); "
                "delete it to rebuild it from predictions.jsonl"
            ) from None

    def write_summary(self, summary: EvalSummary) -> None:
        """Write `summary.json` (replacing any earlier one atomically)."""
        tmp = self.summary_path.with_suffix(".json.tmp")
        tmp.write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.summary_path)
