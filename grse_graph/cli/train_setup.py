"""`TrainOptions`: every option group of `grse train`, merged into the one config of a run.

A new run's config is the TOML's [train] table, the groups' settings over it, then the task's
protocol values where neither gives one (`build_train_config`); a resumed run keeps its stored
config, of which --review alone may change. `TrainOptions.prepare` does every check that needs
no engine, so a wrong flag, task or split costs one line before any model starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from grse_graph.cli.option_groups import OptionGroup
from grse_graph.cli.train_help import setting_flag
from grse_graph.cli.train_options import (
    EngineOptions,
    GateOptions,
    GrseOptions,
    LibraryOptions,
    LoopOptions,
    OutputOptions,
    PaperModeOptions,
    ProbeOptions,
    SettingsGroup,
    TaskOptions,
    given,
)
from grse_graph.errors import ConfigError
from grse_graph.methods.registry import method_class
from grse_graph.tasks.base import Task
from grse_graph.training.config import TrainConfig, protocol_train_config, refuse_unread_settings
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.session import check_training_splits, load_training_task


def build_train_config(
    base: dict[str, Any],
    flags: dict[str, Any],
    origin: str,
    *,
    training_top_k: int,
) -> TrainConfig:
    """TOML values overridden by the flags that were given (None means not given), over the
    task's protocol values (`protocol_train_config`, with the actor family's top-k). A setting
    the chosen method does not read is refused, naming the flag or the TOML key to remove."""
    flagged = given(**flags)

    def removal(setting: str) -> str:
        if setting in flagged:
            return f"remove {setting_flag(setting)}"
        return f"remove {setting} from [train] in {origin}"

    return protocol_train_config(
        {**base, **flagged}, origin, training_top_k=training_top_k, removal=removal
    )


@dataclass(frozen=True)
class PreparedRun:
    """A run ready to train: its folder, its config, its loaded task, and whether it goes on
    from a stored run."""

    run: RunFolder
    config: TrainConfig
    task: Task
    resumed: bool


class TrainOptions(OptionGroup):
    """Every `grse train` option, by concern, in the order `--help` lists them."""

    task: TaskOptions = Field(default_factory=TaskOptions)
    loop: LoopOptions = Field(default_factory=LoopOptions)
    libraries: LibraryOptions = Field(default_factory=LibraryOptions)
    gate: GateOptions = Field(default_factory=GateOptions)
    probe: ProbeOptions = Field(default_factory=ProbeOptions)
    grse: GrseOptions = Field(default_factory=GrseOptions)
    mode: PaperModeOptions = Field(default_factory=PaperModeOptions)
    output: OutputOptions = Field(default_factory=OutputOptions)
    engine: EngineOptions = Field(default_factory=EngineOptions)

    def settings_groups(self) -> tuple[SettingsGroup, ...]:
        """The groups that give `TrainConfig` settings, in declaration order."""
        # Found by type, so a group added above is merged without a second list to keep.
        groups = (getattr(self, name) for name in type(self).model_fields)
        return tuple(group for group in groups if isinstance(group, SettingsGroup))

    def new_run_config(self) -> TrainConfig:
        """A new run's config: the TOML's [train] table, every group's settings over it, the
        task's protocol values (batch, L, the actor family's top-k, decoding) where neither
        gives one; invalid values and settings the method does not read are refused."""
        table = self.engine.train_table()
        flags: dict[str, Any] = {}
        for group in self.settings_groups():
            flags.update(group.settings(table))
        if "task" not in table and "task" not in flags:
            raise ConfigError("grse train: --task is required (or task in --config)")
        top_k = self.engine.llm_config().training_top_k()
        config = build_train_config(table, flags, self.engine.origin(), training_top_k=top_k)
        # A name the TOML gives that no method has validates as an external method's section;
        # it is refused here, as an unknown --method was before.
        method_class(config.method.name)
        return config

    def resumed_config(self, run: RunFolder) -> TrainConfig:
        """The stored config of `run`, with --review switched on if given; --method must be
        the run's, and --init-pack is refused (the run keeps the libraries it started from)."""
        if self.libraries.init_pack is not None:
            raise ConfigError(
                f"--init-pack {self.libraries.init_pack}: a resumed run keeps the libraries it "
                "started from"
            )
        stored = run.read_config()
        method = self.task.method
        if method is not None and method != stored.method.name:
            raise ConfigError(
                f"--method {method}: {run.path} was trained with {stored.method.name}"
            )
        review = self.gate.review
        config = stored.model_copy(update={"review": review or stored.review})
        # Only what this session's flags change is checked: the stored settings are the run's.
        refuse_unread_settings(
            config, lambda s: f"remove {setting_flag(s)}", among=("review",) if review else ()
        )
        return config

    def prepare(self) -> PreparedRun:
        """The run these options ask for, every check that needs no engine done: the method
        name, the export pack, the config (new or resumed), the task and the splits it needs."""
        self.task.check_method()
        self.output.check()
        # The task is read before the engine starts: a wrong task name, data path or
        # category, or a split the run lacks, costs one line, not an engine start.
        if self.output.resume is not None:
            run = RunFolder(self.output.resume)
            config = self.resumed_config(run)
            task = load_training_task(config)
        else:
            config = self.new_run_config()
            task = load_training_task(config)
            config = self.libraries.with_starting_libraries(config, task)
            run = self.output.run_folder(config.task)
        check_training_splits(task, config)
        return PreparedRun(
            run=run, config=config, task=task, resumed=self.output.resume is not None
        )
