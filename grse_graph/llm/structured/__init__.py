"""Pydantic objects from chat models: a registry of methods, lenient parsing, one repair round.

The method is chosen per role (`RoleSettings.structured_method`, carried in the model's
``metadata`` under `STRUCTURED_METHOD_KEY`; default ``function_calling``); `methods.METHODS`
holds them: a forced function call or JSON text. Every reply is read leniently (`lenient`) and
validated; a bounded schema caps the reply (`budget`); a streamed reply is stopped once its tail
repeats (`find_repetition`, counted as ``runaway_stops``). A failed attempt is shown back to the
model with its problem once, then `StructuredOutputError`.
"""

from grse_graph.llm.structured.base import json_request
from grse_graph.llm.structured.budget import schema_token_budget
from grse_graph.llm.structured.call import (
    STRUCTURED_STREAM_KEY,
    astructured_call,
    astructured_outcome,
    cap_parameters,
    find_repetition,
    structured_call,
    structured_outcome,
)
from grse_graph.llm.structured.lenient import parse_json_object
from grse_graph.llm.structured.methods import (
    METHODS,
    SCHEMA_NARROWING_KEY,
    STRUCTURED_METHOD_KEY,
    enforces_schema,
    schema_narrowing,
    structured_method,
)

__all__ = [
    "METHODS",
    "SCHEMA_NARROWING_KEY",
    "STRUCTURED_METHOD_KEY",
    "STRUCTURED_STREAM_KEY",
    "astructured_call",
    "astructured_outcome",
    "cap_parameters",
    "enforces_schema",
    "find_repetition",
    "json_request",
    "parse_json_object",
    "schema_narrowing",
    "schema_token_budget",
    "structured_call",
    "structured_method",
    "structured_outcome",
]
