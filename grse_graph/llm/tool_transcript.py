"""How an agent's tool exchange reaches a role's model: `native` tool messages, or `text`.

llama-cpp-python 0.3.36's ``chatml-function-calling`` chat format (the embedded engine's
default) has two defects, seen on this project's LoCoMo retriever: its prompt template has no
branch for ``tool`` messages, so a tool result never reaches the model (the prompt shows an
empty ``<|im_start|>tool`` line), and once the model chooses to answer while tools are offered,
the answer is generated under the grammar meant for follow-up calls, so it can only be empty
or a function name (the retriever's hand-off was ``functions.grep:``). A role on that engine
uses the ``text`` transcript: every tool result is sent as a user message that names the call,
and a reply that answers while tools are offered is asked again without tools. Every other
engine keeps the ``native`` transcript. `RoleSettings.tool_transcript` chooses ("auto" picks
by engine, `ModelRoles` resolves it).
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

DROPS_TOOL_MESSAGES = frozenset({"chatml-function-calling"})
"""llama-cpp-python chat formats whose template drops tool messages (see the module doc)."""


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
