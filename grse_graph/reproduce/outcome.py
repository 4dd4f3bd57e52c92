"""What a finished run leaves for the tables (`outcome.json`) and what a failed attempt leaves
(`failure.json`); both in the run's folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from grse_graph.durable import atomic_write_text
from grse_graph.evaluation.records import EvalSummary
from grse_graph.evaluation.transitions import LibraryComparison
from grse_graph.training.records import GateRecord
from grse_graph.training.repair import PlantedSkillOutcome

from .manifest import FAILURE_FILE, OUTCOME_FILE, SPEC_FILE, RunSpec


class UtilityPoint(BaseModel):
    """One skill's recorded utility after one iteration (Figure 4's trajectories)."""

    iteration: int
    agent: str
    skill: str
    utility: float | None


class SkillType(BaseModel):
    """One skill's type as the critic model labelled it (Table 9)."""

    agent: str
    skill: str
    words: int
    """Words of the skill's description and body (Table 9's length)."""
    label: str
    """One of the typing labels, or `unparsed` when the reply named none."""
    reply: str


class StageTokens(BaseModel):
    """The actor's calls and tokens in one stage of training, summed from the recorded steps."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class RunOutcome(BaseModel):
    """A finished run. `summary` is the tested team's (or baseline's) test evaluation; a
    training run also has the starting libraries' evaluation, the comparison, its gates, the
    final libraries' folders, the utilities per iteration and (from a planted library) each
    planted skill's credit and fate."""

    run_id: str
    kind: str
    wall_s: float
    summary: EvalSummary | None = None
    start_summary: EvalSummary | None = None
    comparison: LibraryComparison | None = None
    gates: list[GateRecord] = Field(default_factory=list)
    final_libraries: dict[str, str] = Field(default_factory=dict)
    utilities: list[UtilityPoint] = Field(default_factory=list)
    planted: list[PlantedSkillOutcome] = Field(default_factory=list)
    skill_types: list[SkillType] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    actor_stages: dict[str, StageTokens] = Field(default_factory=dict)
    """A training run's actor usage by stage: `rollouts` (the training groups) and
    `validation` (the gate), from the steps in rollouts.jsonl and validation.jsonl."""
    training_s: float | None = None
    test_s: float | None = None


class RunFailure(BaseModel):
    """The last attempt of a run that raised: the cells that need it are marked failed."""

    run_id: str
    error: str


def write_spec(spec: RunSpec, folder: Path) -> None:
    """spec.json: the run's identity and parameters, beside its files."""
    folder.mkdir(parents=True, exist_ok=True)
    document = {"id": spec.run_id, **spec.model_dump(mode="json")}
    atomic_write_text(folder / SPEC_FILE, json.dumps(document, indent=2) + "\n")


def write_outcome(outcome: RunOutcome, folder: Path) -> None:
    """outcome.json (the run is finished from now on); an earlier failure.json is removed."""
    atomic_write_text(folder / OUTCOME_FILE, outcome.model_dump_json(indent=2) + "\n")
    (folder / FAILURE_FILE).unlink(missing_ok=True)


def write_failure(failure: RunFailure, folder: Path) -> None:
    """failure.json of the attempt that raised."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / FAILURE_FILE, failure.model_dump_json(indent=2) + "\n")


def read_outcome(folder: Path) -> RunOutcome:
    """The outcome.json of a finished run."""
    return RunOutcome.model_validate_json((folder / OUTCOME_FILE).read_text(encoding="utf-8"))


def read_failure(folder: Path) -> RunFailure:
    """The failure.json of a failed run."""
    return RunFailure.model_validate_json((folder / FAILURE_FILE).read_text(encoding="utf-8"))
