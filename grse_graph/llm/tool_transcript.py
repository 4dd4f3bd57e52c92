"""How an agent's tool exchange reaches a role's model: `native` tool messages, or `text` (tool
results as user messages, a text answer asked for without tools) for a server whose chat
template drops tool messages (llama-cpp-python's ``chatml-function-calling`` did).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

TOOL_TRANSCRIPT_KEY = "grse_tool_transcript"
"""Key of the model ``metadata`` entry that carries the role's resolved transcript."""

Transcript = Literal["native", "text"]


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
