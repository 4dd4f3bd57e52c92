"""`grse train`'s options as typed groups, one per concern, each turning its flags into what
it feeds.

A group that feeds the run's `TrainConfig` (`SettingsGroup`) gives the settings of the flags
that were given (`settings`: a flag left at its "not given" value is left out, so the TOML's
value or the task's protocol value stands). `OutputOptions` and `EngineOptions` feed the run
around the config: its folder and exported pack, the model roles and the checkpointer. The
groups are merged into one config by `grse_graph.cli.train_setup.TrainOptions`.

Only GRSE has flags of its own (`GrseOptions`); MASkills and SkillMAS read the flags every
method shares and are otherwise configured by the TOML's [train.method] table.
"""

from __future__ import annotations

import tomllib
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from grse_graph.checkpointing import CheckpointerSpec
from grse_graph.cli.eval_cmd import library_folders
from grse_graph.cli.option_groups import OptionGroup
from grse_graph.cli.options import ConfigOption
from grse_graph.cli.train_help import every_method_option, section_option, setting_option
from grse_graph.errors import ConfigError
from grse_graph.llm import LLMConfig, load_config
from grse_graph.methods.registry import DEFAULT_METHOD, METHOD_NAMES, method_class
from grse_graph.skills import PACK_SKILLS_DIR, check_pack_destination, import_pack
from grse_graph.tasks.base import Task
from grse_graph.team import default_team
from grse_graph.team.topology import TOPOLOGY_NAMES
from grse_graph.training.config import TrainConfig
from grse_graph.training.run_folder import RunFolder, default_run_dir

ROLE_SECTIONS = frozenset({"actor", "critic", "optimizer", "engine"})


def given(**values: Any) -> dict[str, Any]:
    """`values` without the ones left at None (the flags that were not given)."""
    return {name: value for name, value in values.items() if value is not None}


class SettingsGroup(OptionGroup):
    """An option group that gives `TrainConfig` settings."""

    @abstractmethod
    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """The settings these flags give over `table` (the TOML's [train] table): a flag that
        was not given is left out."""


class TaskOptions(SettingsGroup):
    """What is trained: the task, its data and question category, the team's topology and
    tool protocol, and the credit method."""

    task: Annotated[
        str | None, every_method_option("task name (demo, hotpotqa, locomo, jsonl)")
    ] = None
    data: Annotated[str | None, every_method_option("path to the task's data")] = None
    method: Annotated[
        str | None,
        every_method_option(f"credit method: {' | '.join(METHOD_NAMES)} (default grse)"),
    ] = None
    topology: Annotated[
        str | None,
        every_method_option(f"team topology: {' | '.join(TOPOLOGY_NAMES)} (default sequential)"),
    ] = None
    tool_protocol: Annotated[
        str | None,
        every_method_option(
            "how the agents call their tools: function (default) | text (the paper's "
            "<grep>pattern</grep> calls parsed by the environment; the default with "
            "--paper-mode)",
            "--tool-protocol",
        ),
    ] = None
    category: Annotated[
        str | None, every_method_option("train on one question category (e.g. LoCoMo's)")
    ] = None

    def check_method(self) -> None:
        """Refuse an unknown `--method` in one line naming the known ones."""
        if self.method is not None:
            method_class(self.method)

    def method_over(self, table: Mapping[str, Any]) -> str | None:
        """The `--method` value to merge over `table`: None when not given, or when it names
        the method whose section the table already holds (so that section's knobs stay)."""
        section = table.get("method")
        if self.method is None:
            return None
        if isinstance(section, dict) and section.get("name", DEFAULT_METHOD) == self.method:
            return None
        return self.method

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """task, data, category, topology, tool_protocol and method."""
        return given(
            task=self.task,
            data=self.data,
            category=self.category,
            topology=self.topology,
            tool_protocol=self.tool_protocol,
            method=self.method_over(table),
        )


class LoopOptions(SettingsGroup):
    """The loop's sizes every method shares: T, the batch, |V| and H, L, the parallel units
    and the base seed (each field is the setting of its name)."""

    iterations: Annotated[int | None, setting_option("iterations", "T (default 5)")] = None
    batch_size: Annotated[
        int | None, setting_option("batch_size", "questions per iteration (24)")
    ] = None
    validation_size: Annotated[
        int | None,
        setting_option("validation_size", "|V| (all; SkillMAS: only with checkpoint = validation)"),
    ] = None
    validation_repeats: Annotated[
        int | None,
        setting_option(
            "validation_repeats", "H per question (1; SkillMAS: only with checkpoint = validation)"
        ),
    ] = None
    library_limit: Annotated[
        int | None, setting_option("library_limit", "L skills per agent (4)")
    ] = None
    concurrency: Annotated[int | None, setting_option("concurrency", "parallel units (4)")] = None
    seed: Annotated[int | None, setting_option("seed", "base seed (0)")] = None

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """The sizes given, under their own names."""
        return given(**self.model_dump())


class LibraryOptions(SettingsGroup):
    """How the agents see their skills, and the libraries a new run starts from."""

    skill_mode: Annotated[
        str | None,
        setting_option(
            "skill_mode",
            "inline (default) | tool | path: how agents see their skills (path: "
            "read_file on /skills/NAME/SKILL.md, as a shipped pack)",
            "--skill-mode",
        ),
    ] = None
    init_library: Annotated[
        list[str] | None,
        setting_option(
            "init_libraries",
            "AGENT=DIR: start this agent from a library (repeatable)",
            "--init-library",
        ),
    ] = None
    init_pack: Annotated[
        Path | None,
        setting_option(
            "init_libraries",
            "start the pack's agents from their libraries in this pack",
            "--init-pack",
        ),
    ] = None

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """skill_mode (the starting libraries need the loaded task: `with_starting_libraries`)."""
        return given(skill_mode=self.skill_mode)

    def with_starting_libraries(self, config: TrainConfig, task: Task) -> TrainConfig:
        """`config` with `init_libraries` set to the folders the run starts from, checked
        against the task's team."""
        # --init-library replaces the TOML's table, as every flag replaces its TOML value.
        if self.init_library:
            given_folders = library_folders(self.init_library, "--init-library")
            libraries = {agent: str(folder.resolve()) for agent, folder in given_folders.items()}
        else:
            libraries = dict(config.init_libraries)
        if not libraries and self.init_pack is None:
            return config
        team = default_team(task, skill_mode=config.skill_mode, topology=config.topology)
        folders = starting_folders(libraries, self.init_pack, team.agent_names)
        return config.model_copy(update={"init_libraries": folders})


def starting_folders(
    libraries: dict[str, str], pack: Path | None, team_agents: Sequence[str]
) -> dict[str, str]:
    """The `--init-library` folders and the `--init-pack` agents' folders (the pack checked
    against its manifest first, so a pack edited after export is refused), as one agent:
    folder map; an agent given by both, or not in the team, is refused with one line."""
    from_pack: dict[str, str] = {}
    if pack is not None:
        from_pack = {a: str((pack / a / PACK_SKILLS_DIR).resolve()) for a in import_pack(pack)}
    both = sorted(from_pack.keys() & libraries.keys())
    if both:
        raise ConfigError(
            f"--init-pack {pack}: agent {both[0]!r} is also given by --init-library; give one"
        )
    for agent, origin in [
        *((a, f"--init-library {a}=...") for a in libraries),
        *((a, f"--init-pack {pack}") for a in from_pack),
    ]:
        if agent not in team_agents:
            raise ConfigError(
                f"{origin}: agent {agent!r} is not in the team (agents: {', '.join(team_agents)})"
            )
    return {**libraries, **from_pack}


class GateOptions(SettingsGroup):
    """What decides whether an edited library is kept: the validation gate's tolerance and,
    with --review, a person."""

    delta: Annotated[float | None, setting_option("delta", "gate tolerance (0.02)")] = None
    review: Annotated[bool, setting_option("review", "review each skill edit", "--review")] = False

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """delta, and review only when switched on (off leaves the TOML's value)."""
        return given(delta=self.delta, review=self.review or None)


class ProbeOptions(SettingsGroup):
    """Probe credit: each skill's effect measured by execution, beside the critic's credit."""

    probe_credit: Annotated[
        bool,
        setting_option(
            "probe",
            "measure each skill's effect by execution every iteration (greedy, "
            "skills masked) and use it as credit beside the critic's (off: the paper's)",
            "--probe-credit",
        ),
    ] = False
    probe_questions: Annotated[
        int | None, setting_option("probe", "with --probe-credit: training questions probed (8)")
    ] = None
    probe_budget: Annotated[
        int | None, setting_option("probe", "with --probe-credit: team runs per probe (120)")
    ] = None
    probe_confidence: Annotated[
        float | None,
        setting_option(
            "probe",
            "with --probe-credit: the level of the interval that must exclude 0 before a "
            "measured effect overrides the critic (0.95)",
        ),
    ] = None

    def section(self, table: Mapping[str, Any]) -> dict[str, Any] | None:
        """The `probe` section these flags give over the table's (None: the table's, or
        off). --probe-questions, --probe-budget and --probe-confidence need probe credit on,
        from --probe-credit or the table."""
        current = table.get("probe")
        chosen = given(
            questions=self.probe_questions,
            budget=self.probe_budget,
            confidence=self.probe_confidence,
        )
        if chosen and not (self.probe_credit or current):
            raise ConfigError(
                "--probe-questions/--probe-budget/--probe-confidence: only with --probe-credit"
            )
        if not self.probe_credit and not chosen:
            return None
        return {**(current or {}), **chosen}

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """probe, when these flags give a section."""
        return given(probe=self.section(table))


class GrseOptions(SettingsGroup):
    """The flags only GRSE reads: knobs of its method section (G, the critic's structure, the
    DAPO filter, labels for the critic) and its first agent's n=G call."""

    group_size: Annotated[
        int | None, section_option("group_size", "G rollouts per question (4)")
    ] = None
    no_structure: Annotated[
        bool, section_option("structured", "w/o structure", "--no-structure")
    ] = False
    dapo_filter: Annotated[
        bool, section_option("dapo_filter", "drop equal groups", "--dapo-filter")
    ] = False
    with_labels: Annotated[
        bool, section_option("with_labels", "critic sees categories", "--with-labels")
    ] = False
    no_first_agent_n: Annotated[
        bool,
        setting_option(
            "first_agent_n", "one first-agent call per rollout, not n=G", "--no-first-agent-n"
        ),
    ] = False

    def section_knobs(self) -> dict[str, Any]:
        """The fields of GRSE's method section (`GrseSettings`) these flags give."""
        return given(
            group_size=self.group_size,
            structured=False if self.no_structure else None,
            dapo_filter=self.dapo_filter or None,
            with_labels=self.with_labels or None,
        )

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """The section knobs at the top level, and first_agent_n when switched off."""
        # TrainConfig moves top-level section knobs into whichever method section the run
        # ends with; another method's section refuses them in one line naming the knob.
        first_agent_n = False if self.no_first_agent_n else None
        return {**self.section_knobs(), **given(first_agent_n=first_agent_n)}


class PaperModeOptions(SettingsGroup):
    """The paper's method alone, without the project's additions."""

    paper_mode: Annotated[
        bool,
        every_method_option(
            "the paper's method only: the project's additions off (memorisation check, "
            "GRSE's output contrast and tool-error rule)",
            "--paper-mode",
        ),
    ] = False

    def settings(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """paper_mode, only when switched on (off leaves the TOML's value)."""
        return given(paper_mode=self.paper_mode or None)


class OutputOptions(OptionGroup):
    """Where the run goes (a new folder or one to resume) and the pack exported after it."""

    out: Annotated[Path | None, typer.Option(help="run folder (default runs/<task>-<time>)")] = None
    resume: Annotated[Path | None, typer.Option(help="continue the run in this folder")] = None
    export: Annotated[
        Path | None,
        typer.Option("--export", help="after training, write the final libraries as a pack here"),
    ] = None
    bookkeeping: Annotated[
        bool,
        typer.Option(
            "--bookkeeping/--no-bookkeeping",
            help="keep the grse-* training metadata in the --export pack",
        ),
    ] = True

    def check(self) -> None:
        """Refuse --no-bookkeeping without --export, and a pack destination that cannot be
        written."""
        if not self.bookkeeping and self.export is None:
            raise ConfigError("--no-bookkeeping: only with --export PACK")
        if self.export is not None:
            # Refused before training, not after it: an unwritable pack must not cost a run.
            check_pack_destination(self.export)

    def run_folder(self, task: str) -> RunFolder:
        """The new run's folder: --out, or runs/<task>-<time>."""
        return RunFolder(self.out or default_run_dir(task))


def read_train_table(path: Path) -> dict[str, Any]:
    """The [train] table of the grse TOML at `path` (a file of bare training keys, as written
    before the roles and training shared one file, reads as the table)."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    if "train" in document:
        table = document["train"]
    else:
        table = {k: v for k, v in document.items() if k not in ROLE_SECTIONS}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [train] must be a table")
    return table


class EngineOptions(OptionGroup):
    """The model side: the grse TOML (model roles and the [train] table), the embedded model,
    and where LangGraph keeps the run's checkpoints."""

    config: ConfigOption = None
    model: Annotated[str | None, typer.Option(help="embedded model: small|default|PATH")] = None
    checkpointer: Annotated[
        str | None,
        typer.Option(
            help="sqlite (RUN/checkpoints.sqlite, the default) or a "
            "postgres://USER@HOST:PORT/DB DSN (the postgres extra); a resume uses the run's "
            "own unless given"
        ),
    ] = None

    def train_table(self) -> dict[str, Any]:
        """The TOML's [train] table (empty without --config)."""
        return read_train_table(self.config) if self.config is not None else {}

    def origin(self) -> str:
        """What an invalid setting's message names as its source."""
        return str(self.config or "flags")

    def llm_config(self) -> LLMConfig:
        """The model roles: the TOML's, with --model over the embedded engine's model."""
        return load_config(self.config, overrides={"engine.model": self.model})

    def checkpointer_spec(self) -> CheckpointerSpec | None:
        """The --checkpointer given (None: the run's own, or sqlite)."""
        return CheckpointerSpec.parse(self.checkpointer) if self.checkpointer else None
