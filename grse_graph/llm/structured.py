"""Pydantic objects from chat models, with one repair round.

Two methods, chosen per role (`grse_graph.llm.config.RoleSettings.structured_method`, carried
to here in the model's ``metadata`` under `STRUCTURED_METHOD_KEY`; models without it use the
default):

- ``function_calling`` (default): the structured-output method every supported server accepts
  (vLLM, llama-server, and llama-cpp-python, whose ``response_format`` rejects ``json_schema``
  but whose forced tool call is grammar-constrained).
- ``json_prompt``: the schema is shown in a final user message, the plain model answers in text
  (no tools, no grammar) and the first JSON object in the reply is parsed and validated. It
  avoids llama-cpp-python's slow grammar sampling at the price of unconstrained output.

With either method, when the output does not parse or validate the model sees its own output and
the error and is asked again; if that also fails the caller gets a `StructuredOutputError`,
never a default object.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from grse_graph.errors import ConfigError, StructuredOutputError
from grse_graph.llm.config import StructuredMethod
from grse_graph.llm.refusals import refusals_translated

T = TypeVar("T", bound=BaseModel)

STRUCTURED_METHOD_KEY = "grse_structured_method"
"""Key of the model ``metadata`` entry that selects the structured-output method."""

_MAX_SHOWN_CHARS = 4000
_DEFAULT_METHOD: StructuredMethod = "function_calling"
# JSON-schema keywords whose values are data or name maps, not subschemas with a `title`.
_DATA_KEYWORDS = frozenset({"default", "examples", "const", "enum"})
_NAME_MAP_KEYWORDS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


@dataclass(frozen=True)
class _Attempt(Generic[T]):
    """One reply read against the schema: the object, or the problem and the output to show."""

    parsed: T | None
    problem: str
    shown: str


@dataclass(frozen=True)
class _Plan(Generic[T]):
    """What to invoke, the opening messages, how to read a reply and how to ask again."""

    runnable: Runnable[Any, Any]
    opening: list[BaseMessage]
    read: Callable[[object], _Attempt[T]]
    ask_again: str


def structured_method(model: BaseChatModel) -> StructuredMethod:
    """The structured-output method selected in ``model.metadata`` (default function calling)."""
    metadata = getattr(model, "metadata", None)
    if not isinstance(metadata, dict) or STRUCTURED_METHOD_KEY not in metadata:
        return _DEFAULT_METHOD
    value = metadata[STRUCTURED_METHOD_KEY]
    for method in get_args(StructuredMethod):
        if value == method:
            chosen: StructuredMethod = method
            return chosen
    raise ConfigError(
        f"model metadata {STRUCTURED_METHOD_KEY}={value!r}: expected one of "
        f"{', '.join(get_args(StructuredMethod))}"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- function calling -------------------------------------------------------------------------


def _runnable(model: BaseChatModel, schema: type[BaseModel]) -> Runnable[Any, Any]:
    # Models with several methods (ChatOpenAI: json_schema by default) are told to use function
    # calling; the base implementation has no `method` argument and always calls a function.
    if "method" in inspect.signature(model.with_structured_output).parameters:
        return model.with_structured_output(schema, method="function_calling", include_raw=True)
    return model.with_structured_output(schema, include_raw=True)


def _describe_output(raw: object) -> str:
    """The model's bad output as text the model can read back."""
    if not isinstance(raw, AIMessage):
        return repr(raw)[:_MAX_SHOWN_CHARS]
    parts: list[str] = []
    for call in raw.tool_calls:
        parts.append(f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)})")
    for invalid in raw.invalid_tool_calls:
        parts.append(f"{invalid.get('name')}({invalid.get('args')})")
    text = raw.text if isinstance(raw.content, (str, list)) else ""
    if text:
        parts.append(text)
    shown = "\n".join(parts) or "(empty reply without a function call)"
    return shown[:_MAX_SHOWN_CHARS]


def _read_function_call(result: object, schema: type[T]) -> _Attempt[T]:
    if not isinstance(result, dict):
        return _Attempt(
            None,
            f"unexpected structured-output result {type(result).__name__}",
            _describe_output(result),
        )
    raw = result.get("raw")
    error = result.get("parsing_error")
    parsed = result.get("parsed")
    if error is None and isinstance(parsed, schema):
        return _Attempt(parsed, "", "")
    shown = _describe_output(raw)
    if error is not None:
        return _Attempt(None, _one_line(str(error)), shown)
    if isinstance(raw, AIMessage) and raw.invalid_tool_calls:
        invalid = raw.invalid_tool_calls[0]
        return _Attempt(
            None, _one_line(f"arguments are not valid JSON: {invalid.get('error')}"), shown
        )
    return _Attempt(None, f"the reply did not call the function {schema.__name__}", shown)


# --- JSON in a plain-text reply ---------------------------------------------------------------


def _strip_titles(node: object, *, name_map: bool = False) -> object:
    """The JSON schema without the ``title`` keywords pydantic adds (noise for the model)."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    if name_map:
        return {name: _strip_titles(sub) for name, sub in node.items()}
    return {
        key: value
        if key in _DATA_KEYWORDS
        else _strip_titles(value, name_map=key in _NAME_MAP_KEYWORDS)
        for key, value in node.items()
        if key != "title"
    }


def json_request(schema: type[BaseModel]) -> str:
    """The user message that asks for one ``schema`` object as JSON text."""
    compact = json.dumps(
        _strip_titles(schema.model_json_schema()), ensure_ascii=False, separators=(",", ":")
    )
    return (
        f"Answer with ONE JSON object (a {schema.__name__}) that matches this JSON schema:\n"
        f"{compact}\n"
        "Reply with the JSON object only."
    )


def _object_spans(text: str) -> list[str]:
    """Every balanced top-level ``{...}`` in ``text``, in order; an unclosed one is last."""
    spans: list[str] = []
    depth = 0
    start = 0
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if depth == 0:
            if char == "{":
                depth, start = 1, index
            continue
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                spans.append(text[start : index + 1])
    if depth > 0:
        spans.append(text[start:])
    return spans


def _first_json_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """(the first top-level ``{...}`` that is valid JSON, or None with the problem)."""
    spans = _object_spans(text)
    if not spans:
        return None, "the reply contains no JSON object"
    first_problem = ""
    for span in spans:
        try:
            value = json.loads(span)
        except json.JSONDecodeError as error:
            first_problem = first_problem or f"the reply is not valid JSON: {error}"
            continue
        if isinstance(value, dict):
            return value, ""
    return None, first_problem


def _validation_problem(error: ValidationError) -> str:
    details = "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or '(object)'}: {item['msg']}"
        for item in error.errors()
    )
    return _one_line(f"{error.error_count()} validation error(s): {details}")


def _read_json_reply(result: object, schema: type[T]) -> _Attempt[T]:
    if not isinstance(result, AIMessage):
        return _Attempt(None, f"unexpected reply {type(result).__name__}", _describe_output(result))
    text = result.text
    shown = text[:_MAX_SHOWN_CHARS] or "(empty reply)"
    value, problem = _first_json_object(text)
    if value is None:
        return _Attempt(None, _one_line(problem), shown)
    try:
        return _Attempt(schema.model_validate(value), "", "")
    except ValidationError as error:
        return _Attempt(None, _validation_problem(error), shown)


# --- the shared loop --------------------------------------------------------------------------


def _plan(model: BaseChatModel, schema: type[T], messages: Sequence[BaseMessage]) -> _Plan[T]:
    name = schema.__name__
    if structured_method(model) == "json_prompt":
        return _Plan(
            runnable=model,
            opening=[*messages, HumanMessage(content=json_request(schema))],
            read=lambda result: _read_json_reply(result, schema),
            ask_again=(
                f"Reply again with only one JSON object ({name}) that fixes this problem and "
                f"matches the schema."
            ),
        )
    return _Plan(
        runnable=_runnable(model, schema),
        opening=list(messages),
        read=lambda result: _read_function_call(result, schema),
        ask_again=(
            f"Call the function {name} again with arguments that fix this problem and "
            f"satisfy its schema."
        ),
    )


def _repair_messages(
    schema: type[BaseModel], attempt: _Attempt[Any], ask_again: str
) -> list[BaseMessage]:
    return [
        AIMessage(content=attempt.shown),
        HumanMessage(
            content=f"That output is not a valid {schema.__name__}: {attempt.problem}\n{ask_again}"
        ),
    ]


def _failure(schema: type[BaseModel], max_repairs: int, problem: str) -> StructuredOutputError:
    return StructuredOutputError(
        f"{schema.__name__}: no valid output after {max_repairs + 1} attempt(s): {problem}"
    )


def structured_call(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    max_repairs: int = 1,
) -> T:
    """Ask ``model`` for a ``schema`` object with the method in its metadata (default: a forced
    function call; see the module docstring).

    On a parse or validation failure the bad output and the error are appended and the model is
    asked again, up to ``max_repairs`` times; then `StructuredOutputError` names the schema and
    the last error.
    """
    plan = _plan(model, schema, messages)
    history = list(plan.opening)
    problem = ""
    for attempt_number in range(max_repairs + 1):
        with refusals_translated():
            reply = plan.runnable.invoke(history)
        attempt = plan.read(reply)
        if attempt.parsed is not None:
            return attempt.parsed
        problem = attempt.problem
        if attempt_number < max_repairs:
            history.extend(_repair_messages(schema, attempt, plan.ask_again))
    raise _failure(schema, max_repairs, problem)


async def astructured_call(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    max_repairs: int = 1,
) -> T:
    """Async `structured_call`."""
    plan = _plan(model, schema, messages)
    history = list(plan.opening)
    problem = ""
    for attempt_number in range(max_repairs + 1):
        with refusals_translated():
            reply = await plan.runnable.ainvoke(history)
        attempt = plan.read(reply)
        if attempt.parsed is not None:
            return attempt.parsed
        problem = attempt.problem
        if attempt_number < max_repairs:
            history.extend(_repair_messages(schema, attempt, plan.ask_again))
    raise _failure(schema, max_repairs, problem)
