"""Methods whose reply is JSON text: the schema is shown in a final user message and the reply's
first JSON object is read leniently (`lenient.parse_json_object`) and validated.

- ``json_prompt``: plain generation, no grammar (cheapest per token, unconstrained).
- ``json_object``: ``response_format={"type": "json_object"}``: the engine constrains the reply
  to some JSON object (llama.cpp: a generic JSON grammar), the schema only in the prompt.
- ``json_object_schema``: the same with the schema inside ``response_format`` (llama-cpp-python
  turns it into a grammar for this schema; servers without that extension ignore it).
- ``json_schema``: ``response_format={"type": "json_schema", ...}`` (llama-server, vLLM; the
  engine enforces the schema; llama-cpp-python 0.3.36 rejects it).
- ``json_grammar``: the schema only as the grammar of ``json_object_schema``; the final message
  names the object and its top-level fields, and the role's system prompt is what describes
  them. Nothing schema-sized enters the prompt, which stays the cacheable system prompt plus
  the request: on the GRSE critic the function-calling tool schema is about 1,100 of a call's
  3,500 prompt tokens and sits where it breaks the prefix shared across groups (issue 10).
  The grammar writes every field name; what a field means must come from the role's prompt
  (the GRSE critic's, the aggregation's and the operators' prompts describe theirs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from grse_graph.llm.config import StructuredMethod
from grse_graph.llm.structured.base import (
    MAX_SHOWN_CHARS,
    MethodRequest,
    ReplyText,
    compact_schema,
    json_request,
)

ResponseFormat = Callable[[type[BaseModel]], dict[str, Any] | None]
Instruction = Callable[[type[BaseModel]], str]


def _no_format(schema: type[BaseModel]) -> None:
    return None


def _json_object(schema: type[BaseModel]) -> dict[str, Any]:
    return {"type": "json_object"}


def _json_object_with_schema(schema: type[BaseModel]) -> dict[str, Any]:
    return {"type": "json_object", "schema": compact_schema(schema)}


def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": compact_schema(schema), "strict": False},
    }


def json_outline(schema: type[BaseModel]) -> str:
    """The short final message of ``json_grammar``: the object's name and top-level fields."""
    fields = ", ".join(schema.model_fields)
    return f"Answer with ONE JSON object (a {schema.__name__}) with the fields {fields}."


@dataclass(frozen=True)
class TextJson:
    """A JSON-text method; ``response_format`` gives the request's ``response_format`` (None:
    none is sent) and ``instruction`` the final user message that asks for the object."""

    name: StructuredMethod
    response_format: ResponseFormat
    enforces_schema: bool = False
    instruction: Instruction = json_request

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
        return ReplyText(text, text[:MAX_SHOWN_CHARS] or "(empty reply)")

    def ask_again(self, schema: type[BaseModel]) -> str:
        return (
            f"Reply again with only one JSON object ({schema.__name__}) that fixes this problem "
            "and matches the schema."
        )


JSON_PROMPT = TextJson("json_prompt", _no_format)
JSON_OBJECT = TextJson("json_object", _json_object)
JSON_OBJECT_SCHEMA = TextJson("json_object_schema", _json_object_with_schema, enforces_schema=True)
JSON_SCHEMA = TextJson("json_schema", _json_schema, enforces_schema=True)
JSON_GRAMMAR = TextJson(
    "json_grammar", _json_object_with_schema, enforces_schema=True, instruction=json_outline
)
