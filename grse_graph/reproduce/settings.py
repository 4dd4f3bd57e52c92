"""The paper's settings as data: Table 7 (splits), Table 8 (training), the smoke size and the
dry run's per-call token sizes, read from `evals/paper/settings.json`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from grse_graph.errors import ConfigError
from grse_graph.validation_text import describe_validation_error

SETTINGS_FILE = "settings.json"


def default_paper_dir() -> Path:
    """The paper's settings and numbers shipped inside the package (`grse_graph/reproduce/paper`;
    a checkout's `evals/paper` links there), so an installed package reproduces too."""
    return Path(__file__).resolve().parent / "paper"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HotpotSplits(_Frozen):
    source: str
    train: int
    validation: int
    test: int
    note: str = ""


class LocomoSplits(_Frozen):
    source: str
    split: str
    validation: dict[str, int | None]
    test: dict[str, int | None]
    train: dict[str, int | None]


class Table7(_Frozen):
    hotpotqa: HotpotSplits
    locomo: LocomoSplits


class Schedule(_Frozen):
    refine_every: int
    induce_every: int
    consolidate_every: int
    prune_every: int


class Table8(_Frozen):
    iterations: int
    group_size: int
    delta: float
    validation_repeats: int | None
    batch_size: dict[str, int | None]
    library_limit: dict[str, int | None]
    schedule: dict[str, Schedule]
    caps: dict[str, int]
    training_sampling: dict[str, float]
    validation_decoding: dict[str, Literal["training", "greedy"]]
    test_decoding: Literal["greedy"]
    baselines: dict[str, int]


class Choice(_Frozen):
    value: Any
    why: str


class SmokeSize(_Frozen):
    """What `--smoke` shrinks every table to."""

    seeds: int
    engine_model: str
    test_questions: int
    train_batch: int
    validation_questions: int
    iterations: int
    group_size: int
    probe_questions: int
    probe_budget: int
    caps: dict[str, int]
    locomo_categories: list[str]
    """The LoCoMo categories Table 2 trains on one by one (the others' trained cells say not
    trained at the smoke size): each is two training runs, the table's largest cost."""


class CostModel(_Frozen):
    """Per-call sizes for the dry run's estimates (assumptions, stated in the file)."""

    about: str
    actor_calls_per_question: dict[str, int]
    actor_prompt_tokens: dict[str, int]
    actor_completion_tokens: int
    critic_prompt_tokens: int
    critic_completion_tokens: int
    optimizer_prompt_tokens: int
    optimizer_completion_tokens: int
    optimizer_calls_per_agent_iteration: int
    typing_prompt_tokens: int
    typing_completion_tokens: int


class TypingLabels(_Frozen):
    """Table 9's skill types (the package's, where the paper's are not available)."""

    labels: list[str]
    why: str


class PaperSettings(_Frozen):
    """Everything of `settings.json`."""

    about: str
    table7: Table7
    table8: Table8
    choices: dict[str, Choice]
    smoke: SmokeSize
    cost: CostModel
    typing: TypingLabels

    def batch_size(self, task: str, category: str | None) -> int | None:
        """Table 8's questions per iteration (None: not in the paper's text)."""
        key = "locomo-mixed" if task == "locomo" and category in (None, "mixed") else task
        return self.table8.batch_size.get(key)

    def chosen(self, key: str) -> Any:
        """The package's value where the paper gives none (`choices`)."""
        choice = self.choices.get(key)
        return choice.value if choice is not None else None


def load_settings(paper_dir: Path | None = None) -> PaperSettings:
    """`settings.json` of `paper_dir` (default `evals/paper/`); a missing or invalid file is
    one `ConfigError` line."""
    path = (paper_dir or default_paper_dir()) / SETTINGS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the paper settings ({error.strerror})") from None
    try:
        return PaperSettings.model_validate_json(text)
    except ValidationError as error:
        raise ConfigError(f"{path}: {describe_validation_error(error)}") from None
