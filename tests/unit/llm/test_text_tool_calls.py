"""Tool calls written as text (llama-server with Qwen2.5-Coder): read back only when the
whole reply is calls of offered tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.llm.tool_transcript import recover_tool_calls
from grse_graph.team.agent import run_agent_turn
from tests.fakes import chat_completion
from tests.unit.team.test_tool_transcript import TURN

OFFERED = {"grep", "load_skill"}


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "grep", "arguments": {"query": "parrot"}}',
        '```json\n{"name": "grep", "arguments": {"query": "parrot"}}\n```',
        '<tool_call>\n{"name": "grep", "arguments": {"query": "parrot"}}\n</tool_call>',
        '{"name": "grep", "parameters": {"query": "parrot"}}',
        '{"name": "grep", "arguments": "{\\"query\\": \\"parrot\\"}"}',
        '[{"name": "grep", "arguments": {"query": "parrot"}}]',
    ],
)
def test_a_call_written_as_text_is_read_back(text: str) -> None:
    recovered = recover_tool_calls(AIMessage(content=text), OFFERED, model_call=2)
    assert recovered is not None
    assert recovered.text == ""
    assert [(c["name"], c["args"], c["id"]) for c in recovered.tool_calls] == [
        ("grep", {"query": "parrot"}, "text-call-2-0")
    ]


def test_several_tagged_calls_keep_their_order() -> None:
    text = (
        '<tool_call>{"name": "grep", "arguments": {"query": "a"}}</tool_call>\n'
        '<tool_call>{"name": "load_skill", "arguments": {"name": "b"}}</tool_call>'
    )
    recovered = recover_tool_calls(AIMessage(content=text), OFFERED)
    assert recovered is not None
    assert [(c["name"], c["id"]) for c in recovered.tool_calls] == [
        ("grep", "text-call-0-0"),
        ("load_skill", "text-call-0-1"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Evidence: NO_EVIDENCE",
        'I will search: {"name": "grep", "arguments": {"query": "parrot"}}',
        '{"name": "search", "arguments": {"query": "parrot"}}',
        '{"name": "grep", "arguments": ["parrot"]}',
        '{"name": "grep", "arguments": {"query": "parrot"}',
        '<tool_call>{"name": "grep", "arguments": {}}</tool_call> and then I answer',
        '{"answer": "a parrot"}',
        "",
    ],
)
def test_anything_but_offered_calls_stays_text(text: str) -> None:
    assert recover_tool_calls(AIMessage(content=text), OFFERED) is None


def test_a_reply_that_already_calls_is_left_alone() -> None:
    reply = AIMessage(content="", tool_calls=[{"name": "grep", "args": {}, "id": "c1"}])
    assert recover_tool_calls(reply, OFFERED) is None


def test_the_role_client_turns_a_call_written_as_text_into_a_call_the_agent_runs() -> None:
    requests: list[dict[str, Any]] = []
    replies = ['{"name": "lookup", "arguments": {"query": "cat"}}', "Evidence: a cat"]

    async def handle(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(await request.aread()))
        return chat_completion({"role": "assistant", "content": replies.pop(0)})

    roles = ModelRoles(
        load_config(env={"GRSE_ACTOR_TOOL_TRANSCRIPT": "native"}),
        UsageLedger(),
        engine_url="http://127.0.0.1:9/v1",
        env={},
        async_transport=httpx.MockTransport(handle),
    )
    step = asyncio.run(run_agent_turn(roles.chat("actor"), TURN))
    assert [(r.name, r.arguments, r.result) for r in step.tool_calls] == [
        ("lookup", {"query": "cat"}, "[D1:3] Nadia said she adopted cat.")
    ]
    assert step.output == "Evidence: a cat"
    replayed = requests[1]["messages"]
    assert replayed[-2]["tool_calls"][0]["id"] == "text-call-0-0"
    assert replayed[-1] == {
        "role": "tool",
        "content": "[D1:3] Nadia said she adopted cat.",
        "tool_call_id": "text-call-0-0",
    }


def test_without_offered_tools_a_json_reply_stays_text() -> None:
    reply = AIMessage(content='{"name": "lookup", "arguments": {"query": "cat"}}')
    assert recover_tool_calls(reply, set()) is None
