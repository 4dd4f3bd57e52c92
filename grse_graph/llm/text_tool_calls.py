"""Tool calls a model wrote as text in ``content`` instead of as ``tool_calls``: the Qwen2.5-Coder
models often write a call as a bare or fenced JSON object, which llama-server returns as text
(issue 10). `recover_tool_calls` reads it back only when the whole text is calls of offered
tools (``<tool_call>`` blocks, or JSON objects with ``name`` and ``arguments``), so an agent's
answer is never mistaken for a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import ToolCall, tool_call

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
RECOVERED_ID_PREFIX = "text-call-"
"""Prefix of the ids given to recovered calls (the text carried none)."""


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
