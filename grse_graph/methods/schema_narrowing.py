"""Narrowed JSON schemas for structured model output, shared by the methods' critics.

A critic's reply is parsed into the method's own pydantic model, but the schema it is *shown*
(and that grammar-constrained engines enforce) lists only the agents, skills and steps of the
unit at hand, so the model cannot cite what does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field, create_model

M = TypeVar("M", bound=BaseModel)


def enum_schema(values: Sequence[str]) -> dict[str, Any]:
    """A JSON schema admitting exactly these strings."""
    return {"type": "string", "enum": list(values)}


def narrowed(model: type[M], name: str, schemas: Mapping[str, dict[str, Any]]) -> type[M]:
    """A subclass of `model` whose listed fields advertise narrower JSON schemas (same types)."""
    fields: dict[str, Any] = {}
    for field, extra in schemas.items():
        base = model.model_fields[field]
        fields[field] = (
            base.annotation,
            Field(description=base.description, json_schema_extra=extra),
        )
    return create_model(name, __base__=model, __doc__=model.__doc__, **fields)
