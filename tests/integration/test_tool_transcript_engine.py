"""On the embedded llama-cpp-python engine a tool result reaches the model only on the ``text``
transcript: its ``chatml-function-calling`` template leaves tool messages out of the prompt.

Measured with the engine's own prompt-token counts: the same turn (one forced tool call whose
result is about 300 tokens, then the answer) costs the model that many more prompt tokens on
``text`` than on ``native``, and the text answer comes from a tool-free call.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.tools import StructuredTool

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.team.agent import AgentTurnInput, run_agent_turn

pytestmark = pytest.mark.engine

RESULT = " ".join(
    f"Turn {i}: Nadia said the ferry to island {i} leaves at dawn." for i in range(25)
)


def _lookup(query: str) -> str:
    """Search the notes for the words of the query."""
    return RESULT


TURN = AgentTurnInput(
    index=0,
    agent="retriever",
    system_prompt="Search the notes with the lookup tool, then say what you found.",
    user_input="When does the ferry leave?",
    task_tools=(StructuredTool.from_function(_lookup, name="lookup"),),
    max_tool_calls=1,
    force_first_tool=True,
)


def _prompt_tokens(small_engine_url: str, transcript: str) -> tuple[int, int]:
    config = load_config(
        env={},
        overrides={"actor.tool_transcript": transcript, "actor.max_tokens": 48},
    )
    roles = ModelRoles(config, UsageLedger(), engine_url=small_engine_url)
    step = asyncio.run(run_agent_turn(roles.chat("actor"), TURN))
    assert [call.name for call in step.tool_calls] == ["lookup"]
    return step.usage.prompt_tokens, step.usage.model_calls


def test_the_tool_result_reaches_the_model_only_on_the_text_transcript(
    small_engine_url: str,
) -> None:
    native, native_calls = _prompt_tokens(small_engine_url, "native")
    text, text_calls = _prompt_tokens(small_engine_url, "text")
    assert native_calls == 2 and text_calls == 2
    # The ~400-token result is in the second prompt only on the text transcript.
    assert text - native > 250, (native, text)
