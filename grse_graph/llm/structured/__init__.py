"""Pydantic objects from chat models (`structured_call`): the role's method (`methods`), lenient
parsing (`lenient`), a reply cap from a bounded schema (`budget`), a streamed reply stopped once
its tail repeats (counted as ``runaway_stops``), and one repair round that shows the model its
problem before `StructuredOutputError`.
"""

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
    json_request,
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
