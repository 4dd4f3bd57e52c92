"""How an agent's tool exchange reaches a role's model: `native` tool messages, or `text`.

Some servers' chat templates have no branch for ``tool`` messages, so a tool result never
reaches the model (llama-cpp-python 0.3.36's ``chatml-function-calling`` format, the project's
engine before xllamacpp, showed an empty ``<|im_start|>tool`` line). A role set to the ``text``
transcript sends every tool result as a user message that names the call, and a reply that
answers while tools are offered is asked again without tools. `RoleSettings.tool_transcript`
chooses; ``auto`` is ``native`` (llama.cpp's server and vLLM render tool messages).
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
