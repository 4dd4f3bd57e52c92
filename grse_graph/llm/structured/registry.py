"""The structured-output methods by name, and the one a model's metadata selects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from langchain_core.language_models import BaseChatModel

from grse_graph.errors import ConfigError
from grse_graph.llm.config import StructuredMethod
from grse_graph.llm.structured.base import StructuredOutputMethod
from grse_graph.llm.structured.function_calling import FunctionCalling
from grse_graph.llm.structured.text_json import (
    JSON_OBJECT,
    JSON_OBJECT_SCHEMA,
    JSON_PROMPT,
    JSON_SCHEMA,
)

STRUCTURED_METHOD_KEY = "grse_structured_method"
"""Key of the model ``metadata`` entry that selects the structured-output method."""

DEFAULT_METHOD: StructuredMethod = "function_calling"

METHODS: Mapping[StructuredMethod, StructuredOutputMethod] = {
    method.name: method
    for method in (FunctionCalling(), JSON_PROMPT, JSON_OBJECT, JSON_OBJECT_SCHEMA, JSON_SCHEMA)
}
assert set(METHODS) == set(get_args(StructuredMethod)), "every StructuredMethod is registered"


def structured_method(model: BaseChatModel) -> StructuredMethod:
    """The structured-output method selected in ``model.metadata`` (default function calling)."""
    metadata = getattr(model, "metadata", None)
    if not isinstance(metadata, dict) or STRUCTURED_METHOD_KEY not in metadata:
        return DEFAULT_METHOD
    value = metadata[STRUCTURED_METHOD_KEY]
    for method in METHODS:
        if value == method:
            return method
    raise ConfigError(
        f"model metadata {STRUCTURED_METHOD_KEY}={value!r}: expected one of {', '.join(METHODS)}"
    )


NARROWED_SCHEMAS_KEY = "grse_narrowed_schemas"
"""Key of the model ``metadata`` entry that allows narrowed schemas (`RoleSettings`)."""


def enforces_schema(model: BaseChatModel) -> bool:
    """Whether the structured-output method of ``model`` has the engine enforce the schema."""
    return METHODS[structured_method(model)].enforces_schema


def wants_narrowed_schema(model: BaseChatModel) -> bool:
    """Whether a caller should send ``model`` a schema narrowed to the names valid for the
    request: only where the engine enforces the schema (shown in a prompt, a long narrowed
    schema costs tokens and buys nothing) and the role allows it (``narrowed_schemas``)."""
    metadata = getattr(model, "metadata", None) or {}
    return enforces_schema(model) and bool(metadata.get(NARROWED_SCHEMAS_KEY, True))
