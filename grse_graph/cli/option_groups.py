"""A command's options declared as typed models, one per concern.

Typer reads a command's options from its function's parameters and has no way to group them
(fastapi/typer#264), so a command with many options ends up with one parameter per flag. Here
each concern is an `OptionGroup`: a frozen pydantic model whose fields are the flags, each
`Annotated[type, typer.Option(...)]` with its default, and a group may hold other groups. The
command takes the groups; `typer_command(command)` is what is registered with Typer: a function
whose signature lists every flag of the groups in declaration order (so `--help` lists them as
written), and which builds the groups from the parsed values before calling `command`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Self, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo
from typer.models import ParameterInfo

R = TypeVar("R")

_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def _group_type(annotation: Any) -> type[OptionGroup] | None:
    if isinstance(annotation, type) and issubclass(annotation, OptionGroup):
        return annotation
    return None


def _option_parameter(name: str, field: FieldInfo) -> inspect.Parameter:
    options = [item for item in field.metadata if isinstance(item, ParameterInfo)]
    if len(options) != 1:
        raise TypeError(f"option field {name!r} needs exactly one typer.Option in its Annotated")
    default = (
        inspect.Parameter.empty
        if field.is_required()
        else field.get_default(call_default_factory=True)
    )
    # Typer reads the flag's declaration from Annotated metadata, as on a plain parameter.
    annotation = Annotated[field.annotation, options[0]]  # type: ignore[name-defined]
    return inspect.Parameter(name, _KEYWORD, default=default, annotation=annotation)


class OptionGroup(BaseModel):
    """Flags of one command that belong together.

    A field is either a flag (`Annotated[type, typer.Option(...)]`, its name the parameter
    name Typer derives the flag from unless the option names one) or another group, whose
    flags are listed in its place. Flag names must be unique across a command's groups.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def cli_parameters(cls) -> list[inspect.Parameter]:
        """The group's flags as keyword parameters, in declaration order (nested groups
        flattened where they are declared)."""
        parameters: list[inspect.Parameter] = []
        for name, field in cls.model_fields.items():
            group = _group_type(field.annotation)
            if group is not None:
                parameters += group.cli_parameters()
            else:
                parameters.append(_option_parameter(name, field))
        return parameters

    @classmethod
    def from_flags(cls, values: Mapping[str, Any]) -> Self:
        """The group (and its nested groups) from parsed flag values by parameter name."""
        fields: dict[str, Any] = {}
        for name, field in cls.model_fields.items():
            group = _group_type(field.annotation)
            fields[name] = group.from_flags(values) if group is not None else values[name]
        return cls.model_validate(fields)


def typer_command(command: Callable[..., R]) -> Callable[..., R]:
    """`command` as Typer should see it: each `OptionGroup` parameter replaced by its flags,
    other parameters (annotated for Typer) kept, every one keyword-only. Called by Typer, it
    builds each group from the flag values and calls `command` with the groups."""
    hints = get_type_hints(command, include_extras=True)
    groups: dict[str, type[OptionGroup]] = {}
    plain: list[str] = []
    parameters: list[inspect.Parameter] = []
    for parameter in inspect.signature(command).parameters.values():
        group = _group_type(hints[parameter.name])
        if group is not None:
            groups[parameter.name] = group
            parameters += group.cli_parameters()
        else:
            plain.append(parameter.name)
            parameters.append(parameter.replace(kind=_KEYWORD, annotation=hints[parameter.name]))
    # Signature refuses a flag name two groups share (or a group shares with the command).
    signature = inspect.Signature(parameters)

    def parsed(**values: Any) -> R:
        built = {name: group.from_flags(values) for name, group in groups.items()}
        return command(**{name: values[name] for name in plain}, **built)

    # Name and help text only (no functools.wraps): Typer calls get_type_hints on what it is
    # given, which would follow __wrapped__ and read this function's annotations in the
    # command's module, where they mean nothing.
    parsed.__name__ = command.__name__
    parsed.__qualname__ = command.__qualname__
    parsed.__module__ = command.__module__
    parsed.__doc__ = command.__doc__
    parsed.__signature__ = signature  # type: ignore[attr-defined]
    return parsed
