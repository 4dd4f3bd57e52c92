"""Pydantic objects from chat models through function calling, with one repair round.

Function calling is the structured-output method every supported server accepts (vLLM,
llama-server, and llama-cpp-python, whose ``response_format`` rejects ``json_schema`` but whose
forced tool call is grammar-constrained). When the arguments do not validate, the model sees its
own output and the validation error and is asked again; if that also fails the caller gets a
`StructuredOutputError`, never a default object.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel

from grse_graph.errors import StructuredOutputError

T = TypeVar("T", bound=BaseModel)

_MAX_SHOWN_CHARS = 4000


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


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _outcome(result: object, schema: type[T]) -> tuple[T | None, str, object]:
    """(parsed object or None, problem description, raw message) of one attempt."""
    if not isinstance(result, dict):
        return None, f"unexpected structured-output result {type(result).__name__}", result
    raw = result.get("raw")
    error = result.get("parsing_error")
    parsed = result.get("parsed")
    if error is None and isinstance(parsed, schema):
        return parsed, "", raw
    if error is not None:
        return None, _one_line(str(error)), raw
    if isinstance(raw, AIMessage) and raw.invalid_tool_calls:
        invalid = raw.invalid_tool_calls[0]
        return None, _one_line(f"arguments are not valid JSON: {invalid.get('error')}"), raw
    return None, f"the reply did not call the function {schema.__name__}", raw


def _repair_messages(schema: type[BaseModel], raw: object, problem: str) -> list[BaseMessage]:
    return [
        AIMessage(content=_describe_output(raw)),
        HumanMessage(
            content=(
                f"That output is not a valid {schema.__name__}: {problem}\n"
                f"Call the function {schema.__name__} again with arguments that fix this "
                f"problem and satisfy its schema."
            )
        ),
    ]


def structured_call(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    max_repairs: int = 1,
) -> T:
    """Ask ``model`` for a ``schema`` object via a forced function call.

    On a parse or validation failure the bad output and the error are appended and the model is
    asked again, up to ``max_repairs`` times; then `StructuredOutputError` names the schema and
    the last error.
    """
    runnable = _runnable(model, schema)
    history = list(messages)
    problem = ""
    for attempt in range(max_repairs + 1):
        parsed, problem, raw = _outcome(runnable.invoke(history), schema)
        if parsed is not None:
            return parsed
        if attempt < max_repairs:
            history.extend(_repair_messages(schema, raw, problem))
    raise StructuredOutputError(
        f"{schema.__name__}: no valid output after {max_repairs + 1} attempt(s): {problem}"
    )


async def astructured_call(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    max_repairs: int = 1,
) -> T:
    """Async `structured_call`."""
    runnable = _runnable(model, schema)
    history = list(messages)
    problem = ""
    for attempt in range(max_repairs + 1):
        result = await runnable.ainvoke(history)
        parsed, problem, raw = _outcome(result, schema)
        if parsed is not None:
            return cast(T, parsed)
        if attempt < max_repairs:
            history.extend(_repair_messages(schema, raw, problem))
    raise StructuredOutputError(
        f"{schema.__name__}: no valid output after {max_repairs + 1} attempt(s): {problem}"
    )
