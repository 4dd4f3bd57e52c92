"""`create_method(settings)`: the one way to get a credit method, and `TrainConfig`'s section.

Built-in methods are listed in `BUILTIN_METHODS`; a caller with its own method passes a mapping that
adds it (`{**BUILTIN_METHODS, "mine": MyMethod}`) wherever a `methods` argument is taken, so
adding a method changes nothing in the training package. `MethodSection` is the type of
`TrainConfig.method`: the built-in settings classes, discriminated by `name`; any other name is
kept as `ExternalMethodSettings` and validated by its method's own `settings_type` here.
`default_section()` is the section of a config that names no method (`DEFAULT_METHOD`), so the
training package never names a method's settings class itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import Discriminator, Tag, TypeAdapter, ValidationError

from grse_graph.errors import ConfigError
from grse_graph.methods.base import BaseCreditMethod, CreditMethod, ExternalMethodSettings
from grse_graph.methods.base import MethodSettings as MethodSettings
from grse_graph.methods.grse.method import GrseMethod, GrseSettings
from grse_graph.methods.maskills import MaskillsMethod, MaskillsSettings
from grse_graph.methods.skillmas import SkillmasMethod, SkillmasSettings
from grse_graph.validation_text import describe_validation_error

MethodClass = type[BaseCreditMethod[Any, Any]]


BUILTIN_METHODS: Mapping[str, MethodClass] = MappingProxyType(
    {"grse": GrseMethod, "maskills": MaskillsMethod, "skillmas": SkillmasMethod}
)
"""The built-in methods by name (read-only)."""

METHOD_NAMES: tuple[str, ...] = tuple(BUILTIN_METHODS)

DEFAULT_METHOD = "grse"
"""The method a training config runs when its `method` section names none."""

_EXTERNAL = "external"


def _section_tag(value: Any) -> str:
    if isinstance(value, dict):
        name = value.get("name", DEFAULT_METHOD)
    else:
        name = getattr(value, "name", None)
    return name if isinstance(name, str) and name in BUILTIN_METHODS else _EXTERNAL


MethodSection = Annotated[
    Annotated[GrseSettings, Tag("grse")]
    | Annotated[MaskillsSettings, Tag("maskills")]
    | Annotated[SkillmasSettings, Tag("skillmas")]
    | Annotated[ExternalMethodSettings, Tag(_EXTERNAL)],
    Discriminator(_section_tag),
]
"""The type of `TrainConfig.method`: a built-in method's settings, chosen by `name`."""

_SECTION: TypeAdapter[MethodSection] = TypeAdapter(MethodSection)
"""Validates a `method` section on its own, as `TrainConfig` validates its field."""


def method_class(name: str, methods: Mapping[str, MethodClass] = BUILTIN_METHODS) -> MethodClass:
    """The class registered under `name` (`ConfigError` naming the known ones otherwise)."""
    if name not in methods:
        raise ConfigError(f"unknown training method '{name}' (known: {', '.join(methods)})")
    return methods[name]


def default_section(name: str = DEFAULT_METHOD) -> MethodSection:
    """The `TrainConfig.method` section of a config that names method `name` and nothing else
    (every knob at its default), validated as `TrainConfig` validates a section."""
    return _SECTION.validate_python({"name": name})


def create_method(
    settings: MethodSettings, methods: Mapping[str, MethodClass] = BUILTIN_METHODS
) -> CreditMethod:
    """The method `settings.name` constructed from its settings (validated by its own
    `settings_type` when they arrived as `ExternalMethodSettings`)."""
    cls = method_class(settings.name, methods)
    if not isinstance(settings, cls.settings_type):
        try:
            settings = cls.settings_type.model_validate(settings.model_dump())
        except ValidationError as error:
            raise ConfigError(f"method {cls.name}: {describe_validation_error(error)}") from None
    method: CreditMethod = cls(settings)
    return method
