"""`grse train --help`: each option sits in the panel of the built-in methods that read it, and
each `TrainConfig` setting has one flag a refusal can name.

The panels are computed from the methods themselves (`ignored_settings`, the fields of their
settings types), so the help and the refusal of an unread setting cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import typer

from grse_graph.methods.registry import BUILTIN_METHODS, MethodClass

EVERY_METHOD = "Every method"


def _panel(readers: Sequence[MethodClass]) -> str:
    if len(readers) == len(BUILTIN_METHODS):
        return EVERY_METHOD
    return " and ".join(cls.title for cls in readers) + " only"


def setting_panel(setting: str) -> str:
    """The help panel of a `TrainConfig` setting's flag: the built-in methods that read it
    (from their `ignored_settings`, so the help and the refusal agree)."""
    return _panel([c for c in BUILTIN_METHODS.values() if setting not in c.ignored_settings])


def section_panel(field: str) -> str:
    """The help panel of a method-section flag: the built-in methods whose settings have it."""
    return _panel([c for c in BUILTIN_METHODS.values() if field in c.settings_type.model_fields])


FLAG_OF_SETTING: Mapping[str, str] = MappingProxyType(
    {
        "first_agent_n": "--no-first-agent-n",
        "probe": "--probe-credit/--probe-questions/--probe-budget/--probe-confidence",
    }
)
"""The flags of the settings whose flag is not `--<setting>` (with - for _; read-only)."""


def setting_flag(setting: str) -> str:
    """The `grse train` flag that sets `setting`."""
    return FLAG_OF_SETTING.get(setting, "--" + setting.replace("_", "-"))


def setting_option(setting: str, help_text: str, *flags: str) -> Any:
    """A `grse train` option that sets a `TrainConfig` setting, in its methods' help panel."""
    return typer.Option(*flags, help=help_text, rich_help_panel=setting_panel(setting))


def section_option(field: str, help_text: str, *flags: str) -> Any:
    """A `grse train` option that sets a method-section field, in its methods' help panel."""
    return typer.Option(*flags, help=help_text, rich_help_panel=section_panel(field))


def every_method_option(help_text: str, *flags: str) -> Any:
    """A `grse train` option that every method reads."""
    return typer.Option(*flags, help=help_text, rich_help_panel=EVERY_METHOD)
