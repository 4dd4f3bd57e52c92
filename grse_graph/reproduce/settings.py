"""The paper's settings as data: Table 7 (splits), Table 8 (training), the smoke size and the
dry run's per-call token sizes, read from `evals/paper/settings.json`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from grse_graph.errors import ConfigError
from grse_graph.tasks.splits import PositionSplits
from grse_graph.validation_text import describe_validation_error

SETTINGS_FILE = "settings.json"
M = TypeVar("M", bound=BaseModel)


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
    dev_positions: PositionSplits
    """Each split's positions in the official dev file (the Hugging Face route's splits)."""
    note: str = ""

    @model_validator(mode="after")
    def _positions_match_sizes(self) -> HotpotSplits:
        for name, span in self.dev_positions.ranges().items():
            if span.size != getattr(self, name):
                raise ValueError(f"dev_positions.{name} ({span}) does not hold {name} questions")
        return self


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


CAP_NAMES = ("actor", "critic", "refine", "induce", "consolidate", "skill_body")
"""Table 8's generation caps: per role call, per operator call and of a skill body."""


class TrainingSampling(_Frozen):
    """The training rollouts' decoding: temperature, top-p and each model family's top-k."""

    temperature: float = Field(ge=0.0)
    top_p: float = Field(gt=0.0, le=1.0)
    top_k: dict[str, int]
    """Per model family, found by its key in the actor's lower-cased model name."""

    def family_of(self, model_name: str) -> str | None:
        """The family (a `top_k` key) whose name is in `model_name`; None: none of them."""
        lowered = model_name.lower()
        return next((family for family in self.top_k if family in lowered), None)


class Baselines(_Frozen):
    """The single-model baselines' settings."""

    cot_sc_samples: int = Field(ge=1)
    cot_sc_temperature: float = Field(ge=0.0)
    self_refine_rounds: int = Field(ge=0)
    full_context_answer_tokens: int = Field(ge=1)


class Table8(_Frozen):
    """Table 8's training settings (and App. A's decoding, serving and baselines), each read by
    the configurations the tables make (`grse_graph.reproduce.specs`)."""

    iterations: int = Field(ge=1)
    group_size: int = Field(ge=1)
    delta: float = Field(ge=0.0)
    validation_repeats: int | None
    batch_size: dict[str, int | None]
    library_limit: dict[str, int | None]
    schedule: dict[str, Schedule]
    caps: dict[str, int]
    context_length: int = Field(ge=1)
    """The context every model is served with: a remote critic's, for its payload budget."""
    training_sampling: TrainingSampling
    greedy_training: dict[str, list[str]]
    """Per task, the methods whose actor decodes greedily in training as well."""
    tool_protocol: str
    """How the agents call their tools in the paper's mode (`grse_graph.team.tool_protocols`)."""
    validation_decoding: dict[str, Literal["training", "greedy"]]
    test_decoding: Literal["greedy"]
    baselines: Baselines
    sources: dict[str, str] = {}
    """Where the text gives each value (`grse.txt:LINE`)."""

    @model_validator(mode="after")
    def _every_cap(self) -> Table8:
        missing = [name for name in CAP_NAMES if name not in self.caps]
        if missing:
            raise ValueError(f"caps lacks {', '.join(missing)}")
        return self


class Inconsistency(_Frozen):
    """Where the paper's text disagrees with itself or with the data we have, and what the
    tables use: printed in the header of a table that runs `task` in one of `categories`
    (`all`: the task's mixed setting)."""

    what: str
    task: str
    categories: list[str]
    text: str
    ours: str
    lines: list[int]

    def applies(self, task: str, category: str | None) -> bool:
        """Whether a run of `task` (and `category`; None: all categories) touches it."""
        return task == self.task and (category or "all") in self.categories


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

    def loop_sizes(self) -> dict[str, int]:
        """The training loop's sizes at the smoke size, as `TrainConfig` fields."""
        return {
            "iterations": self.iterations,
            "batch_size": self.train_batch,
            "validation_size": self.validation_questions,
        }

    def probe_sizes(self) -> dict[str, int]:
        """Probe credit's questions and budget at the smoke size, as `ProbeSettings` fields."""
        return {"questions": self.probe_questions, "budget": self.probe_budget}


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
    paper_inconsistencies: list[Inconsistency] = []
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

    def paper_or_choice(self, value: Any, key: str) -> Any:
        """`value` (Table 8's) when the paper gives it, else the choice `key`; `ConfigError`
        when neither is there (a value a run depends on is never made up)."""
        if value is not None:
            return value
        choice = self.choices.get(key)
        if choice is None:
            raise ConfigError(
                f"settings.json: {key} is not in the paper's text and has no entry in choices"
            )
        return choice.value

    def run_batch_size(self, task: str, category: str | None) -> int | None:
        """Questions per iteration of a run (Table 8's or the choice; None: a task the paper
        does not have)."""
        key = "locomo-mixed" if task == "locomo" and category in (None, "mixed") else task
        if key not in self.table8.batch_size:
            return None
        return int(self.paper_or_choice(self.table8.batch_size[key], f"batch_size.{task}"))

    def library_limit(self, task: str) -> int | None:
        """L of a run (Table 8's or the choice; None: a task the paper does not have)."""
        if task not in self.table8.library_limit:
            return None
        return int(self.paper_or_choice(self.table8.library_limit[task], f"library_limit.{task}"))

    def validation_repeats(self) -> int:
        """H, executions per validation question (Table 8's or the choice)."""
        return int(self.paper_or_choice(self.table8.validation_repeats, "validation_repeats"))

    def training_top_k(self, model_name: str) -> tuple[int, str | None]:
        """The training top-k of an actor model and its family (None: neither family the
        paper names, whose top-k is the choice `training_sampling.top_k.other`)."""
        sampling = self.table8.training_sampling
        family = sampling.family_of(model_name)
        if family is not None:
            return sampling.top_k[family], family
        return int(self.paper_or_choice(None, "training_sampling.top_k.other")), None

    def choices_of(self, task: str) -> list[tuple[str, Choice]]:
        """The choices a training run of `task` uses (Table 8's value not in the text)."""
        t8 = self.table8
        used = {
            "validation_repeats": t8.validation_repeats is None,
            f"batch_size.{task}": t8.batch_size.get(task, 0) is None,
            f"library_limit.{task}": t8.library_limit.get(task, 0) is None,
        }
        return [(key, self.choices[key]) for key, on in used.items() if on and key in self.choices]

    def inconsistencies(self, task: str, category: str | None) -> list[Inconsistency]:
        """The paper's inconsistencies a run of `task` (and `category`) touches."""
        return [item for item in self.paper_inconsistencies if item.applies(task, category)]


def load_settings(paper_dir: Path | None = None) -> PaperSettings:
    """`settings.json` of `paper_dir` (default `evals/paper/`); a missing or invalid file is
    one `ConfigError` line."""
    path = (paper_dir or default_paper_dir()) / SETTINGS_FILE
    return read_paper_file(path, PaperSettings, "the paper settings")


def read_paper_file(path: Path, model: type[M], what: str) -> M:
    """`model` from the JSON file `path`; a missing or invalid file is one `ConfigError` line
    (`what` names the file's content when it cannot be read)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read {what} ({error.strerror})") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as error:
        raise ConfigError(f"{path}: {describe_validation_error(error)}") from None
