"""The run folder of one training run: every artifact, written durably and read back typed.

Layout::

    RUN/config.json                         TrainConfig
    RUN/libraries/iter_<t>/<agent>/<skill>/SKILL.md   libraries after iteration t (0 = start)
    RUN/candidates/iter_<t>/<agent>/...     candidate libraries proposed in iteration t
    RUN/openings.jsonl                      OpeningRecord (a group's first replies, n=G)
    RUN/rollouts.jsonl                      RolloutRecord (training rollouts)
    RUN/critiques.jsonl                     credit records, typed by method (GRSE: CritiqueRecord)
    RUN/method_state.jsonl                  MethodStateRecord (stateful methods only)
    RUN/aggregates.jsonl                    AggregateRecord
    RUN/operators.jsonl                     OperatorLine
    RUN/candidates.jsonl                    CandidateRecord (which agents' libraries changed)
    RUN/reviews.jsonl                       ReviewRecord (`--review` only)
    RUN/validation.jsonl                    ValidationRecord
    RUN/gate.jsonl                          GateRecord
    RUN/probes/probes.jsonl                 ProbeRun (probe credit's team runs)
    RUN/probe_results.jsonl                 ProbeRecord (each iteration's measured effects)
    RUN/test_start, RUN/test_final          the demo's test evaluations (`run_demo`)
    RUN/usage.json                          per-role token and time accounting
    RUN/report.md, RUN/plots/*.png          the final report
    RUN/checkpoints.sqlite                  LangGraph checkpoints (CLI runner only)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from grse_graph.durable import atomic_write_text
from grse_graph.errors import SkillError
from grse_graph.jsonl import JsonlStore, RunFolderError
from grse_graph.skills import SkillLibrary
from grse_graph.skills.boundary import Boundary, decode_utf8
from grse_graph.skills.text import shown
from grse_graph.validation_text import describe_validation_error

from .config import TrainConfig
from .records import (
    AggregateRecord,
    CandidateRecord,
    GateRecord,
    MethodStateRecord,
    OpeningRecord,
    OperatorLine,
    ProbeRecord,
    ReviewRecord,
    RolloutRecord,
    ValidationRecord,
)

C = TypeVar("C", bound=BaseModel)

CONFIG_FILE = "config.json"
LIBRARIES_DIR = "libraries"
GATE_FILE = "gate.jsonl"
METHOD_STATE_FILE = "method_state.jsonl"
MAX_RECORDS_BYTES = 64 * 1024 * 1024
"""The most of a JSONL record file a reader through the run folder's boundary takes in."""

TEST_FOLDERS: dict[str, str] = {"start": "test_start", "final": "test_final"}
"""The evaluation folders inside the run folder, per tested library (the starting libraries,
empty or planted, and the trained ones)."""

UNSHIPPED_STATUSES = frozenset({"shadow", "disabled"})
"""Skill statuses in a method's state that keep a skill out of a shipped pack: a SkillMAS shadow
skill is still on trial in its validation pool, a disabled one lost it."""


def default_run_dir(task: str) -> Path:
    """runs/<task>-<time>: where a run goes when no folder is given (`grse train`, `train`)."""
    return Path("runs") / f"{task}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


class RunFolder:
    """Typed access to a run folder. Creating the object touches nothing on disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.config_path = self.path / CONFIG_FILE
        self.usage_path = self.path / "usage.json"
        self.report_path = self.path / "report.md"
        # Every probe run of the training (probes.jsonl, keyed by libraries).
        self.probes_dir = self.path / "probes"
        self.plots_dir = self.path / "plots"
        self.rollouts = JsonlStore(
            self.path / "rollouts.jsonl", RolloutRecord, key=lambda r: r.unit_id
        )
        self.openings = JsonlStore(
            self.path / "openings.jsonl", OpeningRecord, key=lambda r: r.unit_id
        )
        self._credits: dict[type[BaseModel], JsonlStore[Any]] = {}
        self.method_states = JsonlStore(
            self.path / METHOD_STATE_FILE, MethodStateRecord, key=lambda r: str(r.iteration)
        )
        self.aggregates = JsonlStore(
            self.path / "aggregates.jsonl", AggregateRecord, key=lambda r: str(r.iteration)
        )
        self.operators = JsonlStore(self.path / "operators.jsonl", OperatorLine)
        self.candidates = JsonlStore(
            self.path / "candidates.jsonl", CandidateRecord, key=lambda r: str(r.iteration)
        )
        self.reviews = JsonlStore(self.path / "reviews.jsonl", ReviewRecord)
        self.validation = JsonlStore(
            self.path / "validation.jsonl", ValidationRecord, key=lambda r: r.unit_id
        )
        self.gate = JsonlStore(self.path / GATE_FILE, GateRecord, key=lambda r: str(r.iteration))
        self.probe_results = JsonlStore(
            self.path / "probe_results.jsonl", ProbeRecord, key=lambda r: str(r.iteration)
        )

    def credits(self, record_type: type[C]) -> JsonlStore[C]:
        """RUN/critiques.jsonl read as `record_type`, the run's method's credit record (a line
        another method wrote fails to validate: its `method` field names that method)."""
        store = self._credits.get(record_type)
        if store is None:
            store = JsonlStore(
                self.path / "critiques.jsonl", record_type, key=lambda r: str(r.unit_id)
            )
            self._credits[record_type] = store
        return store

    def test_dir(self, label: str) -> Path:
        """RUN/test_start or RUN/test_final: the test evaluation of the starting (`start`) or
        the trained (`final`) libraries (`TEST_FOLDERS`)."""
        return self.path / TEST_FOLDERS[label]

    def exists(self) -> bool:
        """Whether this folder already holds a run (its config.json)."""
        return self.config_path.exists()

    def write_config(self, config: TrainConfig) -> None:
        """Write config.json atomically."""
        atomic_write_text(self.config_path, config.model_dump_json(indent=2) + "\n")

    def read_config(self) -> TrainConfig:
        """Read config.json back (one-line error naming the file otherwise)."""
        if not self.config_path.exists():
            raise RunFolderError(f"{self.config_path}: no such file (not a run folder)")
        try:
            # Bytes, not text: pydantic reports invalid UTF-8 as a validation error too.
            return TrainConfig.model_validate_json(self.config_path.read_bytes())
        except ValidationError as error:
            message = describe_validation_error(error)
            raise RunFolderError(f"{self.config_path}: {message}") from None

    def library_dir(self, iteration: int, agent: str) -> Path:
        """RUN/libraries/iter_<t>/<agent>: the library of `agent` after iteration t."""
        return self.path / LIBRARIES_DIR / f"iter_{iteration}" / agent

    def candidate_dir(self, iteration: int, agent: str) -> Path:
        """RUN/candidates/iter_<t>/<agent>: the candidate library proposed in iteration t."""
        return self.path / "candidates" / f"iter_{iteration}" / agent

    def relative(self, path: Path) -> str:
        """A path inside the run folder as stored in graph state (portable if the run moves)."""
        return str(path.relative_to(self.path))

    def save_library(self, path: Path, library: SkillLibrary) -> str:
        """Save a library (atomic per skill) and return its path relative to the run folder."""
        library.save(path)
        return self.relative(path)

    def load_library(self, relative: str, agent: str, limit: int | None) -> SkillLibrary:
        """Load a library saved by `save_library`."""
        return SkillLibrary.load(self.path / relative, agent=agent, limit=limit)

    def library_iterations(self) -> list[int]:
        """The iterations t that have a saved libraries/iter_<t> folder, ascending."""
        root = self.path / LIBRARIES_DIR
        if not root.exists():
            return []
        found = [int(p.name.removeprefix("iter_")) for p in root.glob("iter_*") if p.is_dir()]
        return sorted(found)

    def write_usage(self, usage: dict[str, Any]) -> None:
        """Write usage.json atomically (per-role calls, tokens, cached tokens, wall time)."""
        atomic_write_text(self.usage_path, json.dumps(usage, indent=2, sort_keys=True) + "\n")

    def read_usage(self) -> dict[str, Any]:
        """usage.json as written, or an empty mapping when the run wrote none yet."""
        if not self.usage_path.exists():
            return {}
        data = json.loads(self.usage_path.read_text("utf-8"))
        if not isinstance(data, dict):
            raise RunFolderError(f"{self.usage_path}: expected a JSON object")
        return data


def unpromoted_skills(run_dir: Path | str, iteration: int) -> dict[str, set[str]]:
    """agent -> skills the method state of `iteration` marks shadow or disabled (a SkillMAS
    run's validation pool); empty for methods whose state has no skill statuses."""
    records = boundary_records(
        Boundary(Path(run_dir), "run folder"),
        METHOD_STATE_FILE,
        "method state record",
        lambda record: isinstance(record, dict) and isinstance(record.get("state"), dict),
    )
    status: Any = None
    for record in records:
        if record.get("iteration") == iteration:
            status = record["state"].get("status")
    if not isinstance(status, dict):
        return {}
    return {
        agent: {name for name, value in names.items() if value in UNSHIPPED_STATUSES}
        for agent, names in status.items()
        if isinstance(names, dict)
    }


def boundary_records(
    boundary: Boundary, name: str, what: str, valid: Callable[[Any], bool]
) -> list[Any]:
    """The JSON lines of the run folder's file `name`, read through its boundary (none when the
    file is absent). A line that is not JSON or not `valid` is a one-line `SkillError` naming
    it as not a `what`; a partial last line a crash left is not a record yet and is skipped."""
    path = boundary.root / name
    if not boundary.exists(path):
        return []
    lines = decode_utf8(boundary.read(path, MAX_RECORDS_BYTES, name), path).split("\n")
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not valid(record):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):
            if number == len(lines):
                continue
            raise SkillError(f"{shown(path)}:{number}: not a {what}") from None
        records.append(record)
    return records
