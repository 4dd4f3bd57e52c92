"""Fake chat models for unit tests only. Real runs always go through ChatOpenAI."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from pydantic import Field

from grse_graph.llm.provider import RoleName, SamplingSettings


class ScriptedChatModel(GenericFakeChatModel):
    """Replies from a script; `bind_tools` returns itself so tool-using code paths run.

    Each scripted item is an `AIMessage` (may carry `tool_calls`) or a plain string.
    Every call is appended to `calls` (the messages it received) so tests can count calls.
    """

    calls: list[list[BaseMessage]] = Field(default_factory=list)

    def __init__(self, replies: Sequence[AIMessage | str], **kwargs: Any) -> None:
        messages: Iterator[AIMessage | str] = iter(list(replies))
        super().__init__(messages=messages, calls=[], **kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Iterator[Any]:
        # Like a server: text word by word, then each tool call's arguments in two pieces.
        message = self._generate(messages, *args, **kwargs).generations[0].message
        text = message.content if isinstance(message.content, str) else ""
        for piece in re.split(r"(\s)", text) if text else []:
            if piece:
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        for index, call in enumerate(getattr(message, "tool_calls", [])):
            arguments = json.dumps(call["args"])
            half = len(arguments) // 2
            for part, piece in enumerate((arguments[:half], arguments[half:])):
                first = part == 0
                chunk = tool_call_chunk(
                    name=call["name"] if first else None,
                    args=piece,
                    id=call.get("id") if first else None,
                    index=index,
                )
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=[chunk])
                )

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


def chat_completion(
    message: dict[str, Any], *, finish_reason: str = "stop", usage: tuple[int, int] = (5, 5)
) -> httpx.Response:
    """A chat completion with one choice, as an OpenAI-compatible server sends it (for
    `httpx.MockTransport` handlers); `usage` is (prompt, completion) tokens."""
    prompt, completion = usage
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        },
    )


def tool_call_message(name: str, args: dict[str, Any], call_id: str = "call_1") -> AIMessage:
    """An assistant message that calls one tool (what function calling returns)."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


class FakeProvider:
    """A `ChatModelProvider` that hands out one scripted model per role.

    `factory` may instead build a model per request (for example to answer by prompt content).
    """

    def __init__(
        self,
        models: dict[RoleName, BaseChatModel] | None = None,
        factory: Callable[[RoleName, SamplingSettings | None], BaseChatModel] | None = None,
    ) -> None:
        self.models = models or {}
        self.factory = factory
        self.requests: list[tuple[RoleName, SamplingSettings | None, int | None]] = []

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        self.requests.append((role, sampling, max_tokens))
        if self.factory is not None:
            return self.factory(role, sampling)
        return self.models[role]
