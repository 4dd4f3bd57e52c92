"""The structured-output methods by name (`METHODS`; docs/MODELS.md lists them), and the one a
model's metadata selects. llama-server (``--jinja``) may answer ``function_calling`` with the JSON
as text content; that is read as the arguments. ``json_grammar`` sends the schema only as the
grammar and names just the object and its fields: on the GRSE critic the tool schema was ~1,100
of 3,500 prompt tokens and broke the prefix shared across groups (the role's prompt must describe
the fields). A method ``enforces_schema`` when the engine constrains the reply by the schema:
only then does a schema narrowed to the valid names pay for its prompt tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableBinding
from pydantic import BaseModel

from grse_graph.errors import ConfigError
from grse_graph.llm.config import SchemaNarrowing, StructuredMethod

STRUCTURED_METHOD_KEY = "grse_structured_method"
"""Model ``metadata`` key: the role's structured-output method."""
SCHEMA_NARROWING_KEY = "grse_schema_narrowing"
"""Model ``metadata`` key: the role's ``schema_narrowing``."""

DEFAULT_METHOD: StructuredMethod = "function_calling"
DEFAULT_NARROWING: SchemaNarrowing = "per_agent"
S = TypeVar("S", bound=str)

MAX_SHOWN_CHARS = 4000
"""Most characters of a bad reply shown back to the model in the repair round."""

# JSON-schema keywords whose values are data or name maps, not subschemas with a `title`.
_DATA_KEYWORDS = frozenset({"default", "examples", "const", "enum"})
_NAME_MAP_KEYWORDS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


@dataclass(frozen=True)
class MethodRequest:
    """How one method asks: the chat model (tools bound), its messages and request parameters."""

    model: BaseChatModel
    opening: list[BaseMessage]
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplyText:
    """Where the JSON of a reply is, and how to show the reply back to the model."""

    json_text: str
    shown: str
    problem_without_json: str = ""  # said when json_text holds no JSON object


def strip_titles(node: object, *, name_map: bool = False) -> object:
    """The JSON schema without the ``title`` keywords pydantic adds (noise for the model)."""
    if isinstance(node, list):
        return [strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    if name_map:
        return {name: strip_titles(sub) for name, sub in node.items()}
    return {
        key: value
        if key in _DATA_KEYWORDS
        else strip_titles(value, name_map=key in _NAME_MAP_KEYWORDS)
        for key, value in node.items()
        if key != "title"
    }


def compact_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """``schema``'s JSON schema without titles."""
    stripped = strip_titles(schema.model_json_schema())
    assert isinstance(stripped, dict)
    return stripped


def json_request(schema: type[BaseModel]) -> str:
    """The user message that asks for one ``schema`` object as JSON text."""
    compact = json.dumps(compact_schema(schema), ensure_ascii=False, separators=(",", ":"))
    return (
        f"Answer with ONE JSON object (a {schema.__name__}) that matches this JSON schema:\n"
        f"{compact}\n"
        "Reply with the JSON object only."
    )


class FunctionCalling:
    """The ``function_calling`` method."""

    name: StructuredMethod = "function_calling"
    enforces_schema = True

    def request(
        self, model: BaseChatModel, schema: type[BaseModel], messages: Sequence[BaseMessage]
    ) -> MethodRequest:
        bound = model.bind_tools([schema], tool_choice=schema.__name__, parallel_tool_calls=False)
        # The chat model itself is streamed (with the bound tools as request parameters), so a
        # stop thrown into its stream reaches its callbacks (the usage ledger).
        if isinstance(bound, RunnableBinding) and isinstance(bound.bound, BaseChatModel):
            return MethodRequest(bound.bound, list(messages), dict(bound.kwargs))
        if isinstance(bound, BaseChatModel):
            return MethodRequest(bound, list(messages))
        raise TypeError(f"{type(model).__name__}.bind_tools returned {type(bound).__name__}")

    def reply_text(self, reply: AIMessage, schema: type[BaseModel]) -> ReplyText:
        calls = _call_arguments(reply)
        text = reply.text if isinstance(reply.content, (str, list)) else ""
        shown_parts = [f"{name}({arguments})" for name, arguments in calls]
        shown = "\n".join([*shown_parts, text] if text else shown_parts)
        for name, arguments in calls:
            if _names_function(name, schema.__name__):
                return ReplyText(arguments, shown)
        problem = f"the reply did not call the function {schema.__name__}"
        return ReplyText(text, shown or "(empty reply without a function call)", problem)

    def ask_again(self, schema: type[BaseModel]) -> str:
        return (
            f"Call the function {schema.__name__} again with arguments that fix this problem "
            "and satisfy its schema."
        )


def _call_arguments(reply: AIMessage) -> list[tuple[str, str]]:
    """(function name, arguments as JSON text) of each call in a reply, streamed or not."""
    chunks: list[Any] = list(getattr(reply, "tool_call_chunks", None) or [])
    if chunks:
        return [(str(chunk.get("name") or ""), str(chunk.get("args") or "")) for chunk in chunks]
    found = [
        (call["name"], json.dumps(call["args"], ensure_ascii=False)) for call in reply.tool_calls
    ]
    found.extend(
        (str(call.get("name") or ""), str(call.get("args") or ""))
        for call in reply.invalid_tool_calls
    )
    return found


def _names_function(name: str, function: str) -> bool:
    """True when a (streamed, merged) call name is ``function``: llama-cpp-python repeats the
    name in every chunk of a streamed call and merging the chunks concatenates the copies."""
    copies, rest = divmod(len(name), len(function)) if function else (0, 1)
    return copies >= 1 and rest == 0 and name == function * copies


def _json_object_with_schema(schema: type[BaseModel]) -> dict[str, Any]:
    return {"type": "json_object", "schema": compact_schema(schema)}


def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    json_schema = {"name": schema.__name__, "schema": compact_schema(schema), "strict": False}
    return {"type": "json_schema", "json_schema": json_schema}


def json_outline(schema: type[BaseModel]) -> str:
    """The short final message of ``json_grammar``: the object's name and top-level fields."""
    fields = ", ".join(schema.model_fields)
    return f"Answer with ONE JSON object (a {schema.__name__}) with the fields {fields}."


@dataclass(frozen=True)
class TextJson:
    """A JSON-text method: its request's ``response_format`` (None: none) and final message."""

    name: StructuredMethod
    response_format: Callable[[type[BaseModel]], dict[str, Any] | None]
    enforces_schema: bool = False
    instruction: Callable[[type[BaseModel]], str] = json_request

    def request(
        self, model: BaseChatModel, schema: type[BaseModel], messages: Sequence[BaseMessage]
    ) -> MethodRequest:
        chosen = self.response_format(schema)
        return MethodRequest(
            model,
            [*messages, HumanMessage(content=self.instruction(schema))],
            {} if chosen is None else {"response_format": chosen},
        )

    def reply_text(self, reply: AIMessage, schema: type[BaseModel]) -> ReplyText:
        text = reply.text
        return ReplyText(text, text or "(empty reply)")

    def ask_again(self, schema: type[BaseModel]) -> str:
        return (
            f"Reply again with only one JSON object ({schema.__name__}) that fixes this problem "
            "and matches the schema."
        )


StructuredOutputMethod = FunctionCalling | TextJson
"""One way to get a schema object from a chat model: its request after the caller's messages,
the text to parse out of a (streamed, aggregated) reply, and the instruction closing a repair."""

METHODS: Mapping[StructuredMethod, StructuredOutputMethod] = {
    method.name: method
    for method in (
        FunctionCalling(),
        TextJson("json_prompt", lambda schema: None),
        TextJson("json_object", lambda schema: {"type": "json_object"}),
        TextJson("json_object_schema", _json_object_with_schema, enforces_schema=True),
        TextJson("json_schema", _json_schema, enforces_schema=True),
        TextJson(
            "json_grammar", _json_object_with_schema, enforces_schema=True, instruction=json_outline
        ),
    )
}
assert set(METHODS) == set(get_args(StructuredMethod)), "every StructuredMethod is registered"


def _metadata_setting(model: BaseChatModel, key: str, default: S, allowed: Collection[S]) -> S:
    value = (getattr(model, "metadata", None) or {}).get(key, default)
    if value not in allowed:
        raise ConfigError(f"model metadata {key}={value!r}: expected one of {', '.join(allowed)}")
    return cast(S, value)


def structured_method(model: BaseChatModel) -> StructuredMethod:
    """The structured-output method selected in ``model.metadata`` (default function calling)."""
    return _metadata_setting(model, STRUCTURED_METHOD_KEY, DEFAULT_METHOD, METHODS.keys())


def enforces_schema(model: BaseChatModel) -> bool:
    """Whether the structured-output method of ``model`` has the engine enforce the schema."""
    return METHODS[structured_method(model)].enforces_schema


def schema_narrowing(model: BaseChatModel) -> SchemaNarrowing:
    """How to narrow the schema sent to ``model`` to the names valid for the request: the role's
    ``schema_narrowing`` where the engine enforces the schema, else ``off``."""
    if not enforces_schema(model):
        return "off"
    narrowing: tuple[SchemaNarrowing, ...] = get_args(SchemaNarrowing)
    return _metadata_setting(model, SCHEMA_NARROWING_KEY, DEFAULT_NARROWING, narrowing)
