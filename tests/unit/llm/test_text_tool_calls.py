"""Tool calls written as text (llama-server with Qwen2.5-Coder): read back only when the
whole reply is calls of offered tools."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from grse_graph.llm.text_tool_calls import recover_tool_calls

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
