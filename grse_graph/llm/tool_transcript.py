"""How an agent's tool exchange travels between it and a role's model: `native` tool messages, or
`text` (tool results as user messages) for a server whose chat template drops tool messages; and
calls a model wrote as text (Qwen2.5-Coder on llama-server, issue 10), read back only when the
whole text is calls of offered tools, so an agent's answer is never mistaken for a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import ToolCall, tool_call

TOOL_TRANSCRIPT_KEY = "grse_tool_transcript"
"""Key of the model ``metadata`` entry that carries the role's resolved transcript."""

Transcript = Literal["native", "text"]

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
RECOVERED_ID_PREFIX = "text-call-"
"""Prefix of the ids given to recovered calls (the text carried none)."""


def tool_transcript(model: BaseChatModel) -> Transcript:
    """The transcript ``model``'s role uses (``native`` unless its metadata says ``text``)."""
    metadata = getattr(model, "metadata", None) or {}
    return "text" if metadata.get(TOOL_TRANSCRIPT_KEY) == "text" else "native"


def tool_result_message(
    transcript: Transcript, *, name: str, arguments: Mapping[str, Any], call_id: str, content: str
) -> BaseMessage:
    """The message that carries one tool result back to the model."""
    if transcript == "native":
        return ToolMessage(content=content, tool_call_id=call_id, name=name)
    call = json.dumps(dict(arguments), ensure_ascii=False)
    return HumanMessage(content=f"Result of {name}({call}):\n{content}")


def _call_objects(text: str) -> list[Any] | None:
    """The JSON values the (stripped) text consists of, or None when it is not only calls."""
    tagged = _TAGGED.findall(text)
    if tagged and _TAGGED.sub("", text).strip():
        return None
    fenced = _FENCE.match(text)
    chunks = tagged or [fenced.group(1) if fenced else text]
    values: list[Any] = []
    for chunk in chunks:
        try:
            value = json.loads(chunk)
        except json.JSONDecodeError:
            return None
        values.extend(value if isinstance(value, list) else [value])
    return values


def _as_call(value: Any, offered: Collection[str], call_id: str) -> ToolCall | None:
    if not isinstance(value, dict) or value.get("name") not in offered:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, dict):
        return None
    return tool_call(name=value["name"], args=arguments, id=call_id)


def recover_tool_calls(
    reply: AIMessage, offered: Collection[str], *, model_call: int = 0
) -> AIMessage | None:
    """The reply as a tool-calling message when its text is only calls of `offered` tools, else
    None. Ids ``text-call-<model_call>-<i>``: `model_call`, the replies before this one, keeps
    them unique in the conversation."""
    text = reply.text.strip()
    if reply.tool_calls or not text:
        return None
    values = _call_objects(text)
    if not values:
        return None
    calls: list[ToolCall] = []
    for index, value in enumerate(values):
        call = _as_call(value, offered, f"{RECOVERED_ID_PREFIX}{model_call}-{index}")
        if call is None:
            return None
        calls.append(call)
    return reply.model_copy(update={"content": "", "tool_calls": calls})
