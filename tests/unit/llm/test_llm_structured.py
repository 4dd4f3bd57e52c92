"""structured_call: function calling or a JSON prompt, one repair round with the error shown, then
a typed error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, Field

from grse_graph.errors import ConfigError, StructuredOutputError
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.structured import (
    STRUCTURED_METHOD_KEY,
    astructured_call,
    json_request,
    structured_call,
)
from tests.fakes import ScriptedChatModel, chat_completion, tool_call_message


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


# --- json_prompt ------------------------------------------------------------------------------


def _json_model(replies: list[AIMessage | str]) -> ScriptedChatModel:
    return ScriptedChatModel(replies, metadata={STRUCTURED_METHOD_KEY: "json_prompt"})


def test_json_request_shows_the_compact_schema_without_titles() -> None:
    class Doc(BaseModel):
        """A document."""

        title: str
        pages: int = Field(default=1, ge=1)

    text = json_request(Doc)
    assert '"properties":{"title":{"type":"string"},"pages":{"default":1' in text
    assert '"minimum":1' in text
    assert '"title":"Doc"' not in text and '"title":"Pages"' not in text
    assert "A document." in text
    assert text.rstrip().endswith("Reply with the JSON object only.")


def test_json_prompt_reads_a_fenced_json_reply_without_tools() -> None:
    model = _json_model(['```json\n{"label": "ok", "score": 7}\n```'])
    assert structured_call(model, Verdict, QUESTION) == Verdict(label="ok", score=7)
    assert len(model.calls) == 1
    sent = model.calls[0]
    assert sent[0] == QUESTION[0]
    assert isinstance(sent[-1], HumanMessage)
    assert sent[-1].content == json_request(Verdict)
    assert '"maximum":10' in str(sent[-1].content)


@pytest.mark.parametrize(
    "reply",
    [
        'Sure! Here it is: {"label": "a {b} \\" }", "score": 3} Hope that helps {not json}.',
        'The shape is {label, score}, so: {"label": "a {b} \\" }", "score": 3}',
        '{"label": "a {b} \\" }",\n "score": 3}\nThe score is low because {reasons}.',
    ],
)
def test_json_prompt_tolerates_prose_around_the_object(reply: str) -> None:
    model = _json_model([reply])
    assert structured_call(model, Verdict, QUESTION) == Verdict(label='a {b} " }', score=3)


def test_json_prompt_invalid_reply_is_repaired_with_the_error_shown() -> None:
    model = _json_model(['{"label": "ok", "score": 42}', '{"label": "ok", "score": 4}'])
    assert structured_call(model, Verdict, QUESTION) == Verdict(label="ok", score=4)
    assert len(model.calls) == 2
    repair = model.calls[1]
    assert repair[: len(model.calls[0])] == model.calls[0]
    assert isinstance(repair[-2], AIMessage) and '"score": 42' in str(repair[-2].content)
    assert isinstance(repair[-1], HumanMessage)
    assert "score: Input should be less than or equal to 10" in str(repair[-1].content)
    assert "JSON object" in str(repair[-1].content)


def test_json_prompt_reply_without_json_is_repaired() -> None:
    model = _json_model(["It looks fine to me.", '{"label": "fine", "score": 5}'])
    assert structured_call(model, Verdict, QUESTION).label == "fine"
    assert "It looks fine to me." in str(model.calls[1][-2].content)
    assert "contains no JSON object" in str(model.calls[1][-1].content)


def test_json_prompt_still_invalid_after_repair_raises_one_line_error() -> None:
    model = _json_model(["no json here", '{"label": "ok",\n "score": '])
    with pytest.raises(StructuredOutputError) as raised:
        structured_call(model, Verdict, QUESTION)
    message = str(raised.value)
    assert message.startswith("Verdict: no valid output after 2 attempt(s):")
    assert "not valid JSON" in message
    assert "\n" not in message
    assert len(model.calls) == 2


def test_json_prompt_async_repairs_and_fails_like_the_sync_call() -> None:
    repaired = _json_model(['{"label": 3, "score": 1}', 'ok: {"label": "three", "score": 1}'])
    result = asyncio.run(astructured_call(repaired, Verdict, QUESTION))
    assert result == Verdict(label="three", score=1)
    assert len(repaired.calls) == 2
    failing = _json_model(['{"label": "x"}', '{"score": 2}'])
    with pytest.raises(StructuredOutputError, match="label: Field required"):
        asyncio.run(astructured_call(failing, Verdict, QUESTION))


def test_unknown_method_in_metadata_is_a_config_error() -> None:
    model = ScriptedChatModel(["{}"], metadata={STRUCTURED_METHOD_KEY: "xml_tags"})
    with pytest.raises(ConfigError, match="xml_tags"):
        structured_call(model, Verdict, QUESTION)
    assert model.calls == []


def test_model_roles_carry_the_role_method_to_structured_call() -> None:
    requests: list[dict[str, Any]] = []
    replies = [
        chat_completion({"role": "assistant", "content": 'Verdict:\n{"label": "ok", "score": 2}'}),
        chat_completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "Verdict", "arguments": '{"label":"ok","score":3}'},
                    }
                ],
            }
        ),
    ]

    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(request.content))
        return replies.pop(0)

    roles = ModelRoles(
        # A remote actor: "auto" resolves to function calling there on any machine.
        load_config(
            env={
                "GRSE_CRITIC_STRUCTURED_METHOD": "json_prompt",
                "GRSE_ACTOR_BASE_URL": "http://127.0.0.1:9/v1",
            }
        ),
        UsageLedger(),
        engine_url="http://127.0.0.1:9/v1",
        env={},
        transport=httpx.MockTransport(handle),
    )
    assert structured_call(roles.chat("critic"), Verdict, QUESTION) == Verdict(label="ok", score=2)
    plain = requests[0]
    assert "tools" not in plain and "tool_choice" not in plain
    assert plain["messages"][-1] == {"role": "user", "content": json_request(Verdict)}

    assert structured_call(roles.chat("actor"), Verdict, QUESTION) == Verdict(label="ok", score=3)
    forced = requests[1]
    assert forced["tools"][0]["function"]["name"] == "Verdict"
    assert forced["tool_choice"]["function"]["name"] == "Verdict"
    assert forced["messages"][-1]["content"] == "Judge the answer."
