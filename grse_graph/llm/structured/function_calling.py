"""``function_calling``: a forced call of a function whose parameters are the schema. llama-server
with ``--jinja`` may answer with the JSON as text content instead; that is read as the arguments.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableBinding
from pydantic import BaseModel

from grse_graph.llm.config import StructuredMethod
from grse_graph.llm.structured.base import MAX_SHOWN_CHARS, MethodRequest, ReplyText


class FunctionCalling:
    """The ``function_calling`` method."""

    name: StructuredMethod = "function_calling"
    enforces_schema = True

    def request(
        self, model: BaseChatModel, schema: type[BaseModel], messages: Sequence[BaseMessage]
    ) -> MethodRequest:
        bound = model.bind_tools([schema], tool_choice=schema.__name__, parallel_tool_calls=False)
        # The chat model itself is streamed (with the bound tools as request parameters), so a
        # stop thrown into its stream reaches its callbacks (the usage ledger).
        if isinstance(bound, RunnableBinding) and isinstance(bound.bound, BaseChatModel):
            return MethodRequest(bound.bound, list(messages), dict(bound.kwargs))
        if isinstance(bound, BaseChatModel):
            return MethodRequest(bound, list(messages))
        raise TypeError(f"{type(model).__name__}.bind_tools returned {type(bound).__name__}")

    def reply_text(self, reply: AIMessage, schema: type[BaseModel]) -> ReplyText:
        calls = _call_arguments(reply)
        text = reply.text if isinstance(reply.content, (str, list)) else ""
        shown_parts = [f"{name}({arguments})" for name, arguments in calls]
        if text:
            shown_parts.append(text)
        shown = ("\n".join(shown_parts) or "(empty reply without a function call)")[
            :MAX_SHOWN_CHARS
        ]
        for name, arguments in calls:
            if _names_function(name, schema.__name__):
                return ReplyText(arguments, shown)
        return ReplyText(
            text,
            shown,
            problem_without_json=f"the reply did not call the function {schema.__name__}",
        )

    def ask_again(self, schema: type[BaseModel]) -> str:
        return (
            f"Call the function {schema.__name__} again with arguments that fix this problem "
            "and satisfy its schema."
        )


def _call_arguments(reply: AIMessage) -> list[tuple[str, str]]:
    """(function name, arguments as JSON text) of each call in a reply, streamed or not."""
    chunks: list[Any] = list(getattr(reply, "tool_call_chunks", None) or [])
    if chunks:
        return [(str(chunk.get("name") or ""), str(chunk.get("args") or "")) for chunk in chunks]
    found = [
        (call["name"], json.dumps(call["args"], ensure_ascii=False)) for call in reply.tool_calls
    ]
    found.extend(
        (str(call.get("name") or ""), str(call.get("args") or ""))
        for call in reply.invalid_tool_calls
    )
    return found


def _names_function(name: str, function: str) -> bool:
    """True when a (streamed, merged) call name is ``function``: llama-cpp-python repeats the
    name in every chunk of a streamed call and merging the chunks concatenates the copies."""
    copies, rest = divmod(len(name), len(function)) if function else (0, 1)
    return copies >= 1 and rest == 0 and name == function * copies
