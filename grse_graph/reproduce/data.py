"""Where each table's benchmark data comes from, and the one-line error when a user has none.

Per task, the first that applies (the command line before the environment):
1. `--data-TASK PATH`: a local file, split in file order by the paper's sizes (Table 7);
2. `--fixtures DIR`, or at `--smoke` the invented fixtures shipped in the package
   (`grse_graph/reproduce/fixtures`): every table says so in its header;
3. the task's environment variable (`$GRSE_HOTPOTQA`, `$GRSE_LOCOMO`), read as 1;
4. HotpotQA: the Hugging Face dataset (`datasets`, the `hf` extra) with the paper's splits by
   position in the official dev file; LoCoMo: none, which stops a table before it starts.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from grse_graph.errors import ConfigError, GrseError, TaskError
from grse_graph.tasks import hotpotqa
from grse_graph.tasks.splits import PositionSplits
from grse_graph.validation_text import describe_validation_error

from .manifest import RunSpec
from .settings import PaperSettings

SMOKE_FIXTURES = Path(__file__).resolve().parent / "fixtures"
"""The invented smoke fixtures shipped in the package: what `--smoke` reads."""
FIXTURES_FILE = "fixtures.json"


class Official(BaseModel):
    """A benchmark's official file, where it is published, and how a user names their copy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    source: str
    flag: str
    env: str

    def hint(self) -> str:
        """`pass --data-TASK PATH (or set $ENV) to FILE from SOURCE`."""
        return f"pass {self.flag} PATH (or set ${self.env}) to {self.file} from {self.source}"


OFFICIAL: dict[str, Official] = {
    "hotpotqa": Official(
        file=hotpotqa.OFFICIAL_FILE,
        source=hotpotqa.OFFICIAL_SOURCE,
        flag="--data-hotpotqa",
        env="GRSE_HOTPOTQA",
    ),
    "locomo": Official(
        file="locomo10.json",
        source="https://github.com/snap-research/locomo",
        flag="--data-locomo",
        env="GRSE_LOCOMO",
    ),
}
"""The benchmarks a table reads (the paper's Table 7); `demo` ships in the package."""
HUB_ROUTE = f"{hotpotqa.HF_DATASET} ({hotpotqa.HF_CONFIG}, {hotpotqa.HF_SPLIT})"

Origin = Literal["flag", "env", "fixtures", "hub", "missing"]


class DataSource(BaseModel):
    """Where one task's data comes from for a table, and its loader options (the splits)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    origin: Origin
    path: str | None = None
    options: dict[str, Any] = {}

    @property
    def local(self) -> bool:
        """A file on this machine (read by loading it; the others are known from settings)."""
        return self.path is not None

    def given_by(self) -> str:
        """What named this source: the flag, the variable or the fixtures."""
        official = OFFICIAL[self.task]
        return {
            "flag": official.flag,
            "env": f"${official.env}",
            "fixtures": "the fixtures",
            "hub": "no data path",
            "missing": "no data path",
        }[self.origin]

    def header(self) -> str:
        """The header line saying where the table's data of this task comes from."""
        if self.origin == "hub":
            return (
                f"{self.task} data: {HUB_ROUTE} on the Hugging Face hub (the official dev "
                f"file, in its order), dev positions "
                f"{PositionSplits.model_validate(self.options['positions'])}"
            )
        if self.origin == "missing":
            return (
                f"{self.task} data: not given ({OFFICIAL[self.task].hint()}); the sizes are "
                "the paper's"
            )
        sizes = {k: v for k, v in self.options.items() if k.endswith("_size")}
        split = (
            "; split in file order: " + ", ".join(f"{k[:-5]} {v}" for k, v in sizes.items())
            if sizes and self.origin != "fixtures"
            else ""
        )
        return f"{self.task} data: {self.path} (from {self.given_by()}){split}"


class FixtureTask(BaseModel):
    """One task's fixture: its data file (relative to the fixtures folder) and the options of
    its loader (`load_task`'s: the fixture's split sizes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    options: dict[str, Any] = {}


class Fixtures(BaseModel):
    """A folder of data fixtures standing in for the benchmarks (`--fixtures DIR`, or the
    package's at `--smoke`): what they are (printed at the top of every table) and each task's
    file and loader options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    about: str
    tasks: dict[str, FixtureTask]

    def data(self, folder: Path) -> dict[str, str]:
        """Each task's fixture file, resolved against `folder`."""
        return {task: str((folder / f.file).resolve()) for task, f in self.tasks.items()}

    def options(self) -> dict[str, dict[str, Any]]:
        """Each task's loader options."""
        return {task: dict(f.options) for task, f in self.tasks.items()}


def load_fixtures(folder: Path) -> Fixtures:
    """`fixtures.json` of `folder`; a missing or invalid file is one `ConfigError` line."""
    path = folder / FIXTURES_FILE
    try:
        return Fixtures.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the fixtures ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not JSON ({error.msg}, line {error.lineno})") from None
    except ValidationError as error:
        raise ConfigError(f"{path}: {describe_validation_error(error)}") from None


def file_options(settings: PaperSettings, task: str) -> dict[str, Any]:
    """A local benchmark file's loader options: HotpotQA split in file order by Table 7's
    sizes (LoCoMo's split by conversation is the task's own)."""
    if task != "hotpotqa":
        return {}
    t7 = settings.table7.hotpotqa
    return {"train_size": t7.train, "validation_size": t7.validation, "test_size": t7.test}


def resolve_sources(
    settings: PaperSettings,
    given: Mapping[str, str | None],
    env: Mapping[str, str],
    fixtures: tuple[Path, Fixtures] | None = None,
) -> dict[str, DataSource]:
    """Each benchmark's source (see the module's order). `given`: the `--data-TASK` values;
    `env`: the environment; `fixtures`: the folder of `--fixtures` (or the package's at
    `--smoke`) and its `fixtures.json`."""
    folder, chosen = fixtures if fixtures is not None else (None, None)
    sources: dict[str, DataSource] = {}
    for task, official in OFFICIAL.items():
        flag, variable = given.get(task), env.get(official.env)
        if flag:
            sources[task] = _file(settings, task, "flag", flag)
        elif folder is not None and chosen is not None and task in chosen.tasks:
            sources[task] = DataSource(
                task=task,
                origin="fixtures",
                path=chosen.data(folder)[task],
                options=chosen.options()[task],
            )
        elif variable:
            sources[task] = _file(settings, task, "env", variable)
        elif task == "hotpotqa":
            positions = settings.table7.hotpotqa.dev_positions
            sources[task] = DataSource(
                task=task, origin="hub", options={"positions": positions.model_dump()}
            )
        else:
            sources[task] = DataSource(task=task, origin="missing")
    return sources


def _file(settings: PaperSettings, task: str, origin: Origin, path: str) -> DataSource:
    resolved = str(Path(path).expanduser().resolve())
    return DataSource(task=task, origin=origin, path=resolved, options=file_options(settings, task))


def paper_test_size(settings: PaperSettings, task: str, category: str | None) -> int | None:
    """The paper's test questions of `task` (and `category`; LoCoMo without one: all four)."""
    if task == "hotpotqa":
        return settings.table7.hotpotqa.test
    if task == "locomo" and category is not None:
        return settings.table7.locomo.test.get(category)
    if task == "locomo":
        sizes = settings.table7.locomo.test.values()
        return None if None in sizes else sum(s or 0 for s in sizes)
    return None


def _datasets_installed() -> bool:
    return importlib.util.find_spec("datasets") is not None


def require_data(
    sources: Mapping[str, DataSource],
    runs: Iterable[RunSpec],
    load: Callable[[RunSpec], object],
    *,
    datasets_installed: Callable[[], bool] = _datasets_installed,
) -> None:
    """Load every task (and category) `runs` read, before any engine starts: a task without
    data, or whose data does not load, is one `TaskError` line naming the flag, its variable
    and where the official file comes from. Data that is not there at all is named before any
    is loaded (a hub download is not waited for to learn that LoCoMo is missing)."""
    needed = {(spec.task, spec.category): spec for spec in runs if spec.task in sources}
    for task in dict.fromkeys(task for task, _ in needed):
        source, hint = sources[task], OFFICIAL[task].hint()
        if source.origin == "missing":
            raise TaskError(f"{task}: no data: {hint}")
        if source.origin == "hub" and not datasets_installed():
            raise TaskError(
                f"{task}: no data: {hint}, or pip install 'grse-graph[hf]' to load it from "
                f"the Hugging Face hub ({HUB_ROUTE})"
            )
    for (task, _), spec in needed.items():
        try:
            load(spec)
        except GrseError as error:
            raise TaskError(_load_failure(sources[task], error)) from error


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _load_failure(source: DataSource, error: GrseError) -> str:
    if source.origin == "hub":
        cause = _first_line(error.__cause__ or error)
        hint = OFFICIAL[source.task].hint()
        return f"{source.task}: no data: {hint}; the Hugging Face hub ({HUB_ROUTE}): {cause}"
    return f"{_first_line(error)} (data from {source.given_by()})"
