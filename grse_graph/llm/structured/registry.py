"""The structured-output methods by name, and the one a model's metadata selects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from langchain_core.language_models import BaseChatModel

from grse_graph.errors import ConfigError
from grse_graph.llm.config import SchemaNarrowing, StructuredMethod
from grse_graph.llm.structured.base import StructuredOutputMethod
from grse_graph.llm.structured.function_calling import FunctionCalling
from grse_graph.llm.structured.text_json import (
    JSON_GRAMMAR,
    JSON_OBJECT,
    JSON_OBJECT_SCHEMA,
    JSON_PROMPT,
    JSON_SCHEMA,
)

STRUCTURED_METHOD_KEY = "grse_structured_method"
"""Model ``metadata`` key: the role's structured-output method."""

DEFAULT_METHOD: StructuredMethod = "function_calling"
DEFAULT_NARROWING: SchemaNarrowing = "per_agent"

METHODS: Mapping[StructuredMethod, StructuredOutputMethod] = {
    method.name: method
    for method in (
        FunctionCalling(),
        JSON_PROMPT,
        JSON_OBJECT,
        JSON_OBJECT_SCHEMA,
        JSON_SCHEMA,
        JSON_GRAMMAR,
    )
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


SCHEMA_NARROWING_KEY = "grse_schema_narrowing"
"""Model ``metadata`` key: the role's ``schema_narrowing``."""


def enforces_schema(model: BaseChatModel) -> bool:
    """Whether the structured-output method of ``model`` has the engine enforce the schema."""
    return METHODS[structured_method(model)].enforces_schema


def schema_narrowing(model: BaseChatModel) -> SchemaNarrowing:
    """How to narrow the schema sent to ``model`` to the names valid for the request: the role's
    ``schema_narrowing`` where the engine enforces the schema, else ``off``."""
    if not enforces_schema(model):
        return "off"
    metadata = getattr(model, "metadata", None) or {}
    value = metadata.get(SCHEMA_NARROWING_KEY, DEFAULT_NARROWING)
    if value not in get_args(SchemaNarrowing):
        raise ConfigError(
            f"model metadata {SCHEMA_NARROWING_KEY}={value!r}: expected one of "
            f"{', '.join(get_args(SchemaNarrowing))}"
        )
    return value
