"""Command groups that import a command's module only when that command is run or listed.

`grse skills validate` or `grse --version` should not pay for the training stack that
`grse train` needs (langchain, openai, matplotlib: about four seconds of start-up here), and
every `grse` started in a subprocess (fault tests, README examples, users' scripts) pays it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import typer
from typer.core import TyperGroup


def lazy_group(modules: Mapping[str, str]) -> type[TyperGroup]:
    """A `TyperGroup` class for ``typer.Typer(cls=...)``: command ``name`` is whatever
    ``register(app)`` of the module ``modules[name]`` registers under that name, imported on
    first use. Commands are listed in the mapping's order."""

    # Contexts and commands are typed `Any`: typer 0.29 vendors click and its groups take and
    # return its own copies of click's classes, while older typer versions use click itself.
    class LazyGroup(TyperGroup):
        def list_commands(self, ctx: Any) -> list[str]:
            return [*self.commands, *(name for name in modules if name not in self.commands)]

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            if cmd_name not in self.commands and cmd_name in modules:
                self.commands.update(registered_commands(modules[cmd_name]))
            return self.commands.get(cmd_name)

    return LazyGroup


def registered_commands(module_name: str) -> dict[str, Any]:
    """The commands that ``register(app)`` of `module_name` adds to an app, by name."""
    module = importlib.import_module(module_name)
    app = typer.Typer(rich_markup_mode=None)
    module.register(app)
    return dict(typer.main.get_group(app).commands)
