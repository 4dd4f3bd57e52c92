"""The tool transcript: native tool messages, or (for a server whose template drops tool
messages) tool results as user messages and text answers from a tool-free call."""

from __future__ import annotations

import asyncio

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.llm.tool_transcript import TOOL_TRANSCRIPT_KEY, tool_transcript
from grse_graph.team.agent import AgentTurnInput, run_agent_turn
from tests.fakes import ScriptedChatModel


def _lookup(query: str) -> str:
    """Look a word up."""
    return f"[D1:3] Nadia said she adopted {query}."


TURN = AgentTurnInput(
    index=0,
    agent="retriever",
    system_prompt="Find the evidence.",
    user_input="Question: what did Nadia adopt?",
    task_tools=(StructuredTool.from_function(_lookup, name="lookup"),),
    max_tool_calls=2,
)
CALL = AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"query": "cat"}, "id": "c1"}])


def _run(transcript: str | None, replies: list[AIMessage | str]) -> ScriptedChatModel:
    metadata = {TOOL_TRANSCRIPT_KEY: transcript} if transcript else None
    model = ScriptedChatModel(replies, metadata=metadata)
    asyncio.run(run_agent_turn(model, TURN))
    return model


def test_native_transcript_sends_tool_messages_and_keeps_the_answer() -> None:
    model = _run(None, [CALL, "Candidate answer: a cat"])
    assert len(model.calls) == 2
    assert isinstance(model.calls[1][-1], ToolMessage)


def test_text_transcript_sends_results_as_user_text_and_asks_for_the_answer_without_tools() -> None:
    # The second call answers while tools are offered: on this engine that answer is empty or
    # a function name, so it is asked again without tools.
    model = _run("text", [CALL, "functions.lookup:", "Candidate answer: a cat"])
    assert len(model.calls) == 3
    result = model.calls[1][-1]
    assert isinstance(result, HumanMessage)
    assert result.text == 'Result of lookup({"query": "cat"}):\n[D1:3] Nadia said she adopted cat.'
    assert not any(isinstance(m, ToolMessage) for call in model.calls for m in call)
    assert model.calls[2] == model.calls[1]


def test_auto_is_native_on_the_embedded_engine_and_a_remote_one() -> None:
    for overrides in ({}, {"actor.base_url": "http://gpu:8000/v1"}):
        roles = ModelRoles(
            load_config(env={}, overrides=overrides),
            UsageLedger(),
            engine_url="http://127.0.0.1:9/v1",
        )
        assert roles.tool_transcript("actor") == "native"
        assert tool_transcript(roles.chat("actor")) == "native"


def test_a_role_setting_overrides_auto() -> None:
    config = load_config(env={"GRSE_ACTOR_TOOL_TRANSCRIPT": "text"})
    roles = ModelRoles(config, UsageLedger(), engine_url="http://127.0.0.1:9/v1")
    assert roles.tool_transcript("actor") == "text"
