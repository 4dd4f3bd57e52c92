"""Run manifests: the runs a table needs, each with a stable id that names its folder.

A run's id is made of its identity (task, category, method, variant, actor, seed, commit) and a
digest of everything else that changes what it computes (`params`: sizes, the training config,
the runs it reads), so a smoke run never answers for a full one and two tables asking for the
same run share one folder. A folder holding `outcome.json` is finished and reused; any other
existing folder is unfinished (or failed) and is resumed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.durable import atomic_write_text

RunKind = Literal["eval", "baseline", "train", "typing"]
RunState = Literal["new", "unfinished", "failed", "finished"]

OUTCOME_FILE = "outcome.json"
FAILURE_FILE = "failure.json"
SPEC_FILE = "spec.json"
RUNS_DIR = "runs"

_SLUG = re.compile(r"[^a-z0-9.+]+")


def slug(text: str) -> str:
    """`text` as a lower-case folder-name part (`Qwen/Qwen2.5-7B` -> `qwen-qwen2.5-7b`)."""
    return _SLUG.sub("-", text.lower()).strip("-") or "none"


class RunSpec(BaseModel):
    """One run a table needs. `needs` are the ids of runs whose outcome it reads (a transfer
    evaluation reads a training run's libraries); `params` what the executor of `kind` reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: RunKind
    task: str
    category: str | None = None
    method: str
    variant: str = "default"
    actor: str
    seed: int | None = None
    commit: str
    params: dict[str, Any] = Field(default_factory=dict)
    needs: tuple[str, ...] = ()

    def digest(self) -> str:
        """8 hex digits over the whole spec (identity, params, needs)."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]

    @property
    def run_id(self) -> str:
        """`task-category-method-variant-actor-seed-commit-digest`, stable across invocations."""
        seed = "sNA" if self.seed is None else f"s{self.seed}"
        parts = [
            self.task,
            self.category or "all",
            self.method,
            self.variant,
            self.actor,
            seed,
            self.commit,
        ]
        return "-".join(slug(p) for p in parts) + f"-{self.digest()}"

    def folder(self, root: Path) -> Path:
        """The run's folder under the results root."""
        return root / RUNS_DIR / self.run_id


def run_state(spec: RunSpec, root: Path) -> RunState:
    """What a run's folder says: finished (outcome.json), failed (failure.json of its last
    attempt), unfinished (anything else there) or new."""
    folder = spec.folder(root)
    if (folder / OUTCOME_FILE).exists():
        return "finished"
    if (folder / FAILURE_FILE).exists():
        return "failed"
    if folder.exists() and any(folder.iterdir()):
        return "unfinished"
    return "new"


def runs_at_other_commits(specs: Iterable[RunSpec], root: Path) -> dict[str, list[str]]:
    """Commit -> ids of the runs under `root` that do the work of one of `specs` but carry
    another commit in their id (a table started before a `git pull`): they are reused or
    resumed only when `--commit` names that commit. A folder without a readable spec.json is
    not a run of this layer and is passed over."""
    runs = root / RUNS_DIR
    if not runs.is_dir():
        return {}
    work = {_work_of(spec): spec.commit for spec in specs}
    found: dict[str, list[str]] = {}
    for folder in sorted(runs.iterdir()):
        try:
            document = json.loads((folder / SPEC_FILE).read_text(encoding="utf-8"))
            document.pop("id", None)  # spec.json names its folder beside the spec
            other = RunSpec.model_validate(document)
        except (OSError, ValueError, AttributeError):
            continue
        commit = work.get(_work_of(other))
        if commit is not None and commit != other.commit:
            found.setdefault(other.commit, []).append(folder.name)
    return found


def _work_of(spec: RunSpec) -> str:
    # What a run computes, without the commit: the ids of the runs it reads (in `needs` and in
    # its params) carry the commit and a digest over it, so both are masked.
    text = json.dumps(spec.model_dump(mode="json", exclude={"commit", "needs"}), sort_keys=True)
    return re.sub(rf"-{re.escape(slug(spec.commit))}-[0-9a-f]{{8}}\b", "-<run>", text)


def state_action(state: RunState) -> str:
    """What running a table does with a run in `state`."""
    return {
        "new": "new: would run",
        "unfinished": "unfinished: would resume",
        "failed": "failed earlier: would resume",
        "finished": "finished: reused",
    }[state]


def unique_runs(specs: Iterable[RunSpec]) -> list[RunSpec]:
    """`specs` without duplicates (two cells or two tables may need the same run), in first
    order."""
    seen: dict[str, RunSpec] = {}
    for spec in specs:
        seen.setdefault(spec.run_id, spec)
    return list(seen.values())


class Manifest(BaseModel):
    """The runs one table needs, written to `RESULTS/manifests/<table>.json`."""

    table: str
    runs: list[RunSpec]

    def unique(self) -> list[RunSpec]:
        """The runs without duplicates (two cells may need the same run), in first order."""
        return unique_runs(self.runs)

    def write(self, root: Path) -> Path:
        """Write the manifest (each run with its id and folder) and return its path."""
        path = root / "manifests" / f"{self.table}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "table": self.table,
            "runs": [
                {
                    "id": spec.run_id,
                    "folder": str(spec.folder(root)),
                    "state": run_state(spec, root),
                    **spec.model_dump(mode="json"),
                }
                for spec in self.unique()
            ],
        }
        atomic_write_text(path, json.dumps(document, indent=2) + "\n")
        return path
