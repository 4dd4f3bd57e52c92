"""Pydantic objects from chat models: a registry of methods, lenient parsing, one repair round.

The method is chosen per role (`grse_graph.llm.config.RoleSettings.structured_method`, carried
to here in the model's ``metadata`` under `STRUCTURED_METHOD_KEY`; models without it use
``function_calling``). Each method is a `StructuredOutputMethod` in `registry.METHODS`:

- ``function_calling``: a forced call of a function whose parameters are the schema
  (grammar-constrained on llama.cpp engines);
- ``json_prompt``: the schema in a final user message, plain generation, the reply's first JSON
  object read leniently;
- ``json_object`` / ``json_object_schema``: the same prompt with ``response_format`` json_object
  (a generic JSON grammar; with the schema attached, llama-cpp-python's schema grammar);
- ``json_schema``: ``response_format`` json_schema (llama-server, vLLM);
- ``json_grammar``: the schema only in the grammar (``json_object_schema``'s), the prompt naming
  just the object and its fields, for roles whose system prompt describes them.

Every reply is read by `lenient.parse_json_object` (code fences, prose, trailing commas, Python
literals, a truncated object whose closing brackets are missing) and then validated. A schema
whose size is bounded gets a reply cap sized to it (`budget.schema_token_budget`). With
``structured_stream`` on, the reply is streamed and stopped as soon as its tail keeps repeating
(`repetition`); the stop is logged, counted by the usage ledger (``runaway_stops``) and treated
as a failed attempt. A failed attempt is shown back to the model with its problem once; if that
also fails the caller gets a `StructuredOutputError`, never a default object.
"""

from grse_graph.llm.structured.base import StructuredOutputMethod, json_request
from grse_graph.llm.structured.budget import schema_token_budget
from grse_graph.llm.structured.call import (
    STRUCTURED_STREAM_KEY,
    StructuredAttempt,
    StructuredOutcome,
    astructured_call,
    astructured_outcome,
    cap_parameters,
    structured_call,
    structured_outcome,
)
from grse_graph.llm.structured.lenient import parse_json_object
from grse_graph.llm.structured.registry import (
    METHODS,
    SCHEMA_NARROWING_KEY,
    STRUCTURED_METHOD_KEY,
    enforces_schema,
    schema_narrowing,
    structured_method,
)
from grse_graph.llm.structured.repetition import RepetitionLimits, find_repetition

__all__ = [
    "METHODS",
    "SCHEMA_NARROWING_KEY",
    "STRUCTURED_METHOD_KEY",
    "STRUCTURED_STREAM_KEY",
    "RepetitionLimits",
    "StructuredAttempt",
    "StructuredOutcome",
    "StructuredOutputMethod",
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
