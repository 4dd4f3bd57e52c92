"""structured_call: function calling, one repair round with the error shown, then a typed error."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, Field

from grse_graph.errors import StructuredOutputError
from grse_graph.llm.structured import astructured_call, structured_call
from tests.fakes import ScriptedChatModel, tool_call_message


class Verdict(BaseModel):
    """A judged answer."""

    label: str
    score: int = Field(ge=0, le=10)


QUESTION = [HumanMessage(content="Judge the answer.")]


def test_valid_first_reply_is_returned_after_one_call() -> None:
    model = ScriptedChatModel([tool_call_message("Verdict", {"label": "ok", "score": 7})])
    assert structured_call(model, Verdict, QUESTION) == Verdict(label="ok", score=7)
    assert len(model.calls) == 1


def test_invalid_reply_is_repaired_with_the_error_shown() -> None:
    model = ScriptedChatModel(
        [
            tool_call_message("Verdict", {"label": "ok", "score": 42}),
            tool_call_message("Verdict", {"label": "ok", "score": 4}),
        ]
    )
    assert structured_call(model, Verdict, QUESTION) == Verdict(label="ok", score=4)
    assert len(model.calls) == 2
    repair = model.calls[1]
    assert repair[0] == QUESTION[0]
    assert isinstance(repair[-2], AIMessage) and '"score": 42' in str(repair[-2].content)
    assert isinstance(repair[-1], HumanMessage)
    assert "less than or equal to 10" in str(repair[-1].content)
    assert "Verdict" in str(repair[-1].content)


def test_text_reply_without_a_call_is_repaired() -> None:
    model = ScriptedChatModel(
        ["I think it is fine.", tool_call_message("Verdict", {"label": "fine", "score": 5})]
    )
    assert structured_call(model, Verdict, QUESTION).label == "fine"
    assert "I think it is fine." in str(model.calls[1][-2].content)
    assert "did not call the function Verdict" in str(model.calls[1][-1].content)


def test_still_invalid_after_repair_raises_one_line_error() -> None:
    model = ScriptedChatModel(
        [
            tool_call_message("Verdict", {"label": "ok"}),
            tool_call_message("Verdict", {"label": "ok", "score": -1}),
        ]
    )
    with pytest.raises(StructuredOutputError) as raised:
        structured_call(model, Verdict, QUESTION)
    message = str(raised.value)
    assert message.startswith("Verdict:")
    assert "greater than or equal to 0" in message
    assert "\n" not in message
    assert len(model.calls) == 2


def test_zero_repairs_fails_after_one_call() -> None:
    model = ScriptedChatModel([tool_call_message("Verdict", {"label": "ok", "score": 11})])
    with pytest.raises(StructuredOutputError, match="1 attempt"):
        structured_call(model, Verdict, QUESTION, max_repairs=0)
    assert len(model.calls) == 1


def test_async_variant_repairs_too() -> None:
    model = ScriptedChatModel(
        [
            tool_call_message("Verdict", {"label": 3, "score": 1}),
            tool_call_message("Verdict", {"label": "three", "score": 1}),
        ]
    )
    result = asyncio.run(astructured_call(model, Verdict, QUESTION))
    assert result == Verdict(label="three", score=1)
    assert len(model.calls) == 2


def test_async_variant_raises_after_repair() -> None:
    model = ScriptedChatModel(["no", "still no"])
    with pytest.raises(StructuredOutputError, match="Verdict"):
        asyncio.run(astructured_call(model, Verdict, QUESTION))
