"""One-line text for a pydantic `ValidationError` that names every failing field.

Every place that turns a validation failure into a user-facing (or model-facing) message uses
`describe_validation_error`, so all of them name the field by its dotted location
(`method.group_size`, `skills.0.name`) and none drops it or spills pydantic's multi-line text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import ValidationError
from pydantic_core import ErrorDetails

MAX_SHOWN_INPUT_CHARS = 40
"""A rejected value is echoed only up to this many characters: enough to recognise it, short
enough that a long string cannot swamp the one-line message."""

_SCALARS = (str, int, float, bool, type(None))

Location = tuple[int | str, ...]
Origin = Callable[[Location], str | None]
"""Where the value at a location came from (a file, a variable), or None when not known."""


def error_location(location: Location, names: Mapping[str, str] | None = None) -> str:
    """A pydantic `loc` as a dotted path (`train.group_size`, `skills.0.name`); "" at the root.
    `names` renames parts whose field name differs from what the user wrote (`allowed_tools`
    is `allowed-tools` in a SKILL.md)."""
    return ".".join(str((names or {}).get(str(part), part)) for part in location)


def _shown_input(item: ErrorDetails, origin: str | None) -> str:
    # A root-level error's input is the whole document and a missing field's is the object that
    # lacks it: echoing either repeats the input rather than pointing at the bad value.
    value = item.get("input")
    if not item["loc"] or item["type"] == "missing" or not isinstance(value, _SCALARS):
        return f" (from {origin})" if origin else ""
    text = repr(value)
    if len(text) > MAX_SHOWN_INPUT_CHARS:
        text = text[: MAX_SHOWN_INPUT_CHARS - 3] + "..."
    return f" (got {text} from {origin})" if origin else f" (got {text})"


def describe_error(
    item: ErrorDetails, names: Mapping[str, str] | None = None, origin: Origin | None = None
) -> str:
    """One pydantic error as `location: message (got value)`; the location is left out at the
    root, where the message (e.g. a model validator's) stands alone. `origin` adds where the
    value came from: `(got 5 from env GRSE_ACTOR_TEMPERATURE)`."""
    # pydantic prefixes a validator's own ValueError text with "Value error, ": noise to a reader.
    message = " ".join(str(item["msg"]).split()).removeprefix("Value error, ")
    location = error_location(item["loc"], names)
    text = f"{location}: {message}" if location else message
    return text + _shown_input(item, origin(item["loc"]) if origin is not None else None)


def describe_validation_error(
    error: ValidationError, names: Mapping[str, str] | None = None, origin: Origin | None = None
) -> str:
    """Every error of `error` on one line, each naming its field (`names` and `origin` as for
    `describe_error`).

    One error reads `train.group_size: Input should be greater than 1 (got 1)`; several read
    `2 validation error(s): train.group_size: ...; task: Field required`.
    """
    parts = [describe_error(item, names, origin) for item in error.errors(include_url=False)]
    if len(parts) == 1:
        return parts[0]
    return f"{len(parts)} validation error(s): " + "; ".join(parts)
