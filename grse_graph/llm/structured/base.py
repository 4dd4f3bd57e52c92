"""What the structured-output methods share: their request and reply shapes and the schema text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

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
