"""Every number of a training run, with the paper's defaults (GUIDE §3).

The loop-level settings (iterations, batch, validation and gate, library limit, schedule,
decoding, concurrency) are shared by every method, so a comparison of methods differs only in
the `method` section, which holds the method's own knobs (`grse_graph.methods.registry`).
A method that does not read a loop-level setting says so (`BaseCreditMethod.unread_settings`);
`train_config_from`, the one way the CLI, its TOML and a Studio context build a config, refuses
such a setting when it is given a value other than its default. A new run's config is built by
`protocol_train_config`, which first fills in the task's protocol values
(`grse_graph.tasks.protocol`): `grse train`, Studio's training graph, the demo's
`learning_config` and the Python API all call it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from grse_graph.errors import ConfigError
from grse_graph.llm.provider import SamplingSettings
from grse_graph.methods.operators import OperatorSchedule
from grse_graph.methods.registry import (
    BUILTIN_METHODS,
    DEFAULT_METHOD,
    MethodClass,
    MethodSection,
    default_section,
)
from grse_graph.probes import ProbeSettings
from grse_graph.tasks.protocol import with_protocol_defaults
from grse_graph.team.kinds import SkillMode
from grse_graph.team.layout import PromptLayout
from grse_graph.team.tool_protocols import ToolProtocolName
from grse_graph.validation_text import describe_validation_error

LEGACY_METHOD_FIELDS: tuple[str, ...] = (
    "group_size",
    "eps",
    "dapo_filter",
    "structured",
    "with_labels",
    "critic_max_tokens",
    "payload_limits",
)
"""Method knobs a flat config (config.json before the method section, a flat TOML table, the
CLI flags) gives at the top level; they are moved into the `method` section."""


class TrainConfig(BaseModel):
    """Settings of one training run. Written to RUN/config.json and read back on resume.

    Defaults are the paper's: T = 5 iterations, 24 training questions per iteration (LoCoMo),
    tolerance delta = 0.02, library limit L = 4, training sampling temperature 1.0 / top-p 0.95
    / top-k 20, greedy validation; the method section defaults to GRSE (G = 4).
    `schedule` None means the task's paper schedule (`OperatorSchedule.for_task`).
    `validation_size` None means the whole validation split. `probe` (off by default) adds
    credit measured by execution to every method's plan (`grse_graph.probes.credit`).
    `category` restricts a task to one question category (LoCoMo per-category runs);
    `init_libraries` maps agents to library folders the run starts from (empty: every agent
    starts without skills).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    data: str | None = None
    category: str | None = None
    init_libraries: dict[str, str] = Field(default_factory=dict)
    method: MethodSection = Field(default_factory=default_section)
    iterations: int = Field(default=5, ge=1)
    batch_size: int = Field(default=24, ge=1)
    validation_size: int | None = Field(default=None, ge=1)
    validation_repeats: int = Field(default=1, ge=1)
    delta: float = Field(default=0.02, ge=0.0)
    library_limit: int = Field(default=4, ge=1)
    schedule: OperatorSchedule | None = None
    review: bool = False
    seed: int = 0
    skill_mode: SkillMode = Field(
        default="inline",
        description="how agents see their skills: inline, the load_skill tool, or path (read_file "
        "on /skills/<name>/SKILL.md, as a shipped pack is deployed)",
    )
    topology: str = Field(
        default="sequential", description="team topology of the default team (team.TOPOLOGIES)"
    )
    prompt_layout: PromptLayout = Field(
        default="role_first",
        description="order of each agent's opening messages: the paper's role_first, or "
        "input_first (the shared task input first, so the engine computes it once)",
    )
    tool_protocol: ToolProtocolName = Field(
        default="function",
        description="how the agents call their tools: function calling, or text (the paper's "
        "<grep>pattern</grep> calls parsed by the environment; the default in paper mode)",
    )
    concurrency: int = Field(default=4, ge=1)
    first_agent_n: bool = Field(
        default=True,
        description="sample the first agent's first reply of a group in one call with n=G",
    )
    max_attempts: int = Field(
        default=2, ge=1, description="tries per rollout/critic/validation unit on transient errors"
    )
    actor_max_tokens: int | None = Field(
        default=None, ge=1, description="cap per agent call; None: the actor role's (paper: 4,096)"
    )
    training_sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings.training(top_k=20)
    )
    validation_sampling: SamplingSettings = Field(default_factory=SamplingSettings.greedy)
    probe: ProbeSettings | None = Field(
        default=None,
        description="probe credit: each iteration, measure every skill's effect by execution "
        "(greedy, skills masked) and add it to the plan beside the critic's credit; None: off "
        "(the paper's method)",
    )
    memorisation_check: bool = Field(
        default=True,
        description="project addition: every drafted skill body is checked against the run's "
        "training inputs and the text it restates (copy, entity and restates rules)",
    )
    paper_mode: bool = Field(
        default=False,
        description="the paper's method only: the project's additions (memorisation_check and "
        "the method's own, e.g. GRSE's output_contrast and tool_error_rule) off",
    )

    @model_validator(mode="before")
    @classmethod
    def _method_section(cls, data: Any) -> Any:
        # Flat configs (every config.json written before the method section existed) name the
        # method as a string and keep its knobs at the top level; both move into the section.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        section = data.get("method", DEFAULT_METHOD)
        flat = {k: data.pop(k) for k in LEGACY_METHOD_FIELDS if k in data}
        if isinstance(section, str):
            section = {"name": section}
        if flat:
            if isinstance(section, BaseModel):
                section = section.model_dump()
            section = {**section, **flat}
        data["method"] = section
        return _paper_mode_values(data) if data.get("paper_mode") is True else data

    @model_validator(mode="after")
    def _paper_mode_has_no_addition(self) -> TrainConfig:
        on = [name for name in self.project_additions() if self.addition_on(name)]
        if self.paper_mode and on:
            raise ValueError(
                f"paper_mode turns the project's additions off; remove {', '.join(on)}"
            )
        return self

    @model_validator(mode="after")
    def _sampling_has_no_fixed_seed(self) -> TrainConfig:
        # Each rollout gets its own seed; a fixed seed here would make the group identical.
        if self.training_sampling.seed is not None:
            raise ValueError("training_sampling.seed must be unset: seeds are set per rollout")
        return self

    def project_additions(self) -> tuple[str, ...]:
        """The settings of the project's additions to the paper this run has: the loop's
        (`LOOP_ADDITIONS`) and its method section's (`project_additions` of its settings)."""
        return LOOP_ADDITIONS + method_additions(self.method)

    def addition_on(self, name: str) -> bool:
        """Whether the project addition `name` (a loop setting or a method-section field) is
        on in this run."""
        source = self if name in LOOP_ADDITIONS else self.method
        return bool(getattr(source, name))

    def mode(self) -> str:
        """`paper` or `project`, and the additions on: the line a report states."""
        if self.paper_mode:
            return "paper (the project's additions off)"
        on = [name for name in self.project_additions() if self.addition_on(name)]
        return f"project (additions on: {', '.join(on) or 'none'})"

    def setting_default(self, name: str) -> Any:
        """The default of a loop-level setting in this run's mode (a project addition's
        default is off in paper mode)."""
        if self.paper_mode and name in LOOP_ADDITIONS:
            return False
        if self.paper_mode and name == "tool_protocol":
            return PAPER_TOOL_PROTOCOL
        return TrainConfig.model_fields[name].get_default(call_default_factory=True)

    def operator_schedule(self) -> OperatorSchedule:
        """The configured schedule, or the paper's schedule for this task."""
        return self.schedule if self.schedule is not None else OperatorSchedule.for_task(self.task)


PAPER_TOOL_PROTOCOL: ToolProtocolName = "text"
"""The tool protocol of the paper's mode (`grse_graph.team.tool_protocols`)."""

LOOP_ADDITIONS: tuple[str, ...] = ("memorisation_check",)
"""Loop-level settings that switch one of the project's additions to the paper on or off."""


def method_additions(section: object) -> tuple[str, ...]:
    """The project-addition fields of a method section (its settings type's
    `project_additions`; none for a method that declares none)."""
    return tuple(getattr(section, "project_additions", ()))


def _paper_mode_values(data: dict[str, Any]) -> dict[str, Any]:
    """A config table in paper mode with every project addition it does not give set off (the
    validator after refuses one given on)."""
    data = {**data}
    for name in LOOP_ADDITIONS:
        data.setdefault(name, False)
    # The paper's retriever writes its grep calls as text (a default, not an addition: a run
    # may still choose function calling).
    data.setdefault("tool_protocol", PAPER_TOOL_PROTOCOL)
    section = data["method"]
    if isinstance(section, BaseModel):
        section = section.model_dump()
    if isinstance(section, dict):
        cls = BUILTIN_METHODS.get(str(section.get("name", DEFAULT_METHOD)))
        fields = method_additions(cls.settings_type) if cls is not None else ()
        data["method"] = {**{name: False for name in fields}, **section}
    return data


Removal = Callable[[str], str]
"""How to take a setting out of the config it came from (`'review'` -> `'remove --review'`)."""


def _remove(setting: str) -> str:
    return f"remove {setting}"


def unread_settings(
    config: TrainConfig, methods: Mapping[str, MethodClass] = BUILTIN_METHODS
) -> list[str]:
    """The settings `config` gives a value other than their default that its method does not
    read, in field order (none for a method `methods` does not hold: it is refused later)."""
    cls = methods.get(config.method.name)
    if cls is None:
        return []
    unread = cls.unread_settings(config.method)
    return [
        name
        for name in TrainConfig.model_fields
        if name in unread and getattr(config, name) != config.setting_default(name)
    ]


def refuse_unread_settings(
    config: TrainConfig,
    removal: Removal = _remove,
    methods: Mapping[str, MethodClass] = BUILTIN_METHODS,
    among: Collection[str] | None = None,
) -> TrainConfig:
    """`config`, or `ConfigError` in one line naming its method and each setting it gives that
    the method does not read (`among` narrows the check to these settings)."""
    refused = [s for s in unread_settings(config, methods) if among is None or s in among]
    if not refused:
        return config
    plural = "s" if len(refused) > 1 else ""
    named = ", ".join(f"'{s}' ({removal(s)})" for s in refused)
    raise ConfigError(f"method {config.method.name} does not read setting{plural} {named}")


def train_config_from(
    values: Mapping[str, Any],
    origin: str,
    removal: Removal = _remove,
    methods: Mapping[str, MethodClass] = BUILTIN_METHODS,
) -> TrainConfig:
    """The `TrainConfig` of user-given values (flags, a TOML table, a Studio context): an
    invalid value is one line starting with `origin`, and a setting the chosen method does not
    read is refused (`refuse_unread_settings`) rather than silently left unused."""
    try:
        config = TrainConfig.model_validate(dict(values))
    except ValidationError as error:
        raise ConfigError(f"{origin}: {describe_validation_error(error)}") from None
    return refuse_unread_settings(config, removal, methods)


def protocol_train_config(
    values: Mapping[str, Any],
    origin: str,
    *,
    training_top_k: int,
    removal: Removal = _remove,
    methods: Mapping[str, MethodClass] = BUILTIN_METHODS,
) -> TrainConfig:
    """The `TrainConfig` of a new run from user-given values, the one way every entry point
    builds it: the task's protocol values (batch size, library limit, training and validation
    decoding with the actor family's `training_top_k`) where `values` gives none, then
    `train_config_from` (invalid values and unread settings refused)."""
    if "task" not in values:
        raise ConfigError(f"{origin}: a training config needs a task")
    filled = with_protocol_defaults(values, training_top_k=training_top_k)
    return train_config_from(filled, origin, removal, methods)
