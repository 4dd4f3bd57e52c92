"""The `TrainConfig` and the method registry of one `train` call, assembled the way `grse train`
assembles them from its TOML table and flags: the given values, the task's protocol values where
none is given, the method chosen by name, settings or class."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from pydantic import BaseModel

from grse_graph.errors import ConfigError
from grse_graph.methods.base import MethodSettings
from grse_graph.methods.registry import BUILTIN_METHODS, MethodClass, create_method
from grse_graph.training.config import (
    TrainConfig,
    protocol_train_config,
    train_config_from,
)

MethodChoice: TypeAlias = str | MethodSettings | MethodClass
"""A method's name, its settings section (name and knobs), or its class (registered for the
call under its `name`, with its default settings)."""
ConfigInput: TypeAlias = TrainConfig | Mapping[str, Any]
"""A `TrainConfig`, used as it is, or a mapping of its fields (a grse TOML's `[train]` table),
completed with the task's protocol values."""


def method_registry(
    method: MethodChoice | None, methods: Mapping[str, MethodClass] | None
) -> dict[str, MethodClass]:
    """The built-in methods, those of `methods`, and `method` when it is a class: methods are
    registered per call, never globally, so adding one changes nothing in the package."""
    registry = {**BUILTIN_METHODS, **(methods or {})}
    if isinstance(method, type):
        registry[method.name] = method
    return registry


def _section_name(section: object) -> str:
    if isinstance(section, str):
        return section
    if isinstance(section, Mapping):
        return str(section.get("name", "grse"))
    return str(getattr(section, "name", "grse"))


def _method_section(method: MethodChoice | None, current: object) -> Any:
    """The method section to put over `current` (the config's), or `current` itself when
    `method` is None or names the method `current` already configures (its knobs are kept,
    as `grse train --method` keeps a TOML's section of the same method)."""
    if method is None:
        return current
    if isinstance(method, MethodSettings):
        return method.model_dump()
    name = method if isinstance(method, str) else method.name
    return current if _section_name(current) == name else {"name": name}


def train_config(
    task: str,
    config: ConfigInput | None,
    method: MethodChoice | None,
    *,
    methods: Mapping[str, MethodClass],
    training_top_k: Callable[[], int],
) -> TrainConfig:
    """The run's `TrainConfig` for `task`, built by `protocol_train_config` as the CLI builds
    its own (a setting the method does not read is refused); `training_top_k` (the actor
    family's top-k) is asked only when the protocol values are filled in (a `TrainConfig` is
    used as it is)."""
    table = config.model_dump() if isinstance(config, TrainConfig) else dict(config or {})
    given = table.get("task", task)
    if given != task:
        raise ConfigError(f"config: task {given!r} differs from the task trained ({task!r})")
    table["task"] = task
    section = _method_section(method, table.get("method", "grse"))
    table["method"] = section.model_dump() if isinstance(section, BaseModel) else section
    if isinstance(config, TrainConfig):
        return train_config_from(table, "config", methods=methods)
    return protocol_train_config(table, "config", training_top_k=training_top_k(), methods=methods)


def check_method(config: TrainConfig, registry: Mapping[str, MethodClass]) -> None:
    """Refuse an unknown method or knobs its settings reject, in one line, before any model
    runs (the training graph builds the same method again from the same section)."""
    create_method(config.method, registry)
