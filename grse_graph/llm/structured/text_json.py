"""Methods whose reply is JSON text: the schema in a final user message, the reply's first JSON
object read leniently and validated.

- ``json_prompt``: plain generation, no grammar.
- ``json_object``: ``response_format`` json_object, a generic JSON grammar.
- ``json_object_schema``: the same with the schema attached (a grammar for it where supported).
- ``json_schema``: ``response_format`` json_schema, enforced by llama-server and vLLM.
- ``json_grammar``: the schema only as ``json_object_schema``'s grammar, the final message naming
  just the object and its fields: nothing schema-sized in the prompt (on the GRSE critic the
  tool schema was ~1,100 of 3,500 prompt tokens and broke the prefix shared across groups), so
  the role's prompt must describe the fields.
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


def _json_object_with_schema(schema: type[BaseModel]) -> dict[str, Any]:
    return {"type": "json_object", "schema": compact_schema(schema)}


def json_outline(schema: type[BaseModel]) -> str:
    """The short final message of ``json_grammar``: the object's name and top-level fields."""
    fields = ", ".join(schema.model_fields)
    return f"Answer with ONE JSON object (a {schema.__name__}) with the fields {fields}."


@dataclass(frozen=True)
class TextJson:
    """A JSON-text method: its request's ``response_format`` (None: none) and final message."""

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


JSON_PROMPT = TextJson("json_prompt", lambda schema: None)
JSON_OBJECT = TextJson("json_object", lambda schema: {"type": "json_object"})
JSON_OBJECT_SCHEMA = TextJson("json_object_schema", _json_object_with_schema, enforces_schema=True)
JSON_SCHEMA = TextJson(
    "json_schema",
    lambda schema: {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": compact_schema(schema), "strict": False},
    },
    enforces_schema=True,
)
JSON_GRAMMAR = TextJson(
    "json_grammar", _json_object_with_schema, enforces_schema=True, instruction=json_outline
)
