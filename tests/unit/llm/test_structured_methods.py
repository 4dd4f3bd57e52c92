"""The structured-output registry, lenient parsing, the schema token budget, the repetition
stop and the repair round (fakes and an httpx mock server; no engine)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, Literal

import httpx
import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from pydantic import BaseModel, Field

from grse_graph.errors import StructuredOutputError
from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.llm.config import StructuredMethod
from grse_graph.llm.structured import (
    METHODS,
    STRUCTURED_METHOD_KEY,
    STRUCTURED_STREAM_KEY,
    astructured_outcome,
    cap_parameters,
    find_repetition,
    parse_json_object,
    schema_token_budget,
    structured_call,
    structured_outcome,
)
from grse_graph.methods.grse.critic_schema import critic_output_schema
from tests.fakes import ScriptedChatModel, chat_completion, tool_call_message


class Verdict(BaseModel):
    """A judged answer."""

    label: str
    score: int = Field(ge=0, le=10)
    ok: bool = True


QUESTION = [HumanMessage(content="Judge the answer.")]
TEXT_METHODS: list[StructuredMethod] = [
    "json_prompt",
    "json_object",
    "json_object_schema",
    "json_schema",
    "json_grammar",
]
SENTENCE = "The retriever does not follow the conversation. "
DIAGNOSIS = '{"agent": "a", "refs": ["r1.s1"], "why": "the same diagnosis"}, '
LOOP = '{"label": "' + "the model says the same thing " * 12


def _model(
    replies: list[Any], method: StructuredMethod, *, stream: bool = True
) -> ScriptedChatModel:
    return ScriptedChatModel(
        replies, metadata={STRUCTURED_METHOD_KEY: method, STRUCTURED_STREAM_KEY: stream}
    )


def _reply_for(method: StructuredMethod, args: dict[str, Any]) -> Any:
    return tool_call_message("Verdict", args) if method == "function_calling" else json.dumps(args)


# --- lenient parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "repair"),
    [
        ('{"label": "a", "score": 1}', {"label": "a", "score": 1}, ""),
        ('```json\n{"label": "a", "score": 1}\n```', {"label": "a", "score": 1}, ""),
        ('Here you go: {"label": "a", "score": 1} done.', {"label": "a", "score": 1}, ""),
        ('{"label": "a", "score": 1,}', {"label": "a", "score": 1}, "literals"),
        ('{"tags": ["x", "y",], "n": 1}', {"tags": ["x", "y"], "n": 1}, "literals"),
        (
            '{"ok": True, "skill": None, "b": False}',
            {"ok": True, "skill": None, "b": False},
            "literals",
        ),
        ('{"text": "True or None, stays"}', {"text": "True or None, stays"}, ""),
        (
            '{"label": "a", "refs": ["r1.s1", "r2.s1"',
            {"label": "a", "refs": ["r1.s1", "r2.s1"]},
            "closed",
        ),
        ('{"a": {"b": 1}, "c": [{"d": 2},', {"a": {"b": 1}, "c": [{"d": 2}]}, "closed"),
        ('{"label": "x}", "score": 2', {"label": "x}", "score": 2}, "closed"),
        # Cut inside a list item's string: the partial item goes, the complete ones stay.
        (
            '{"notes": [], "items": [{"a": 1}, {"a": "two, [x]"}, {"a": "cut in the mid',
            {"notes": [], "items": [{"a": 1}, {"a": "two, [x]"}]},
            "dropped_tail",
        ),
        (
            '{"items": [{"refs": ["r1.s1"]}, {"refs": ["r2.s1", "r2',
            {"items": [{"refs": ["r1.s1"]}]},
            "dropped_tail",
        ),
    ],
)
def test_lenient_parser_forgives_small_model_slips(
    text: str, expected: dict[str, Any], repair: str
) -> None:
    found = parse_json_object(text)
    assert (found.value, found.repair) == (expected, repair)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no object here", "contains no JSON object"),
        ('{"label": "cut in the mid', "cut off"),
        ('{"label": "a", "score":', "cut off"),
        ('{"label": "a", "score": tr', "cut off"),
        ('{"label": a}', "not valid JSON"),
        # No complete list item to keep: a field is never shortened.
        ('{"items": [{"a": "cut', "cut off"),
    ],
)
def test_lenient_parser_refuses_what_it_cannot_complete_honestly(text: str, problem: str) -> None:
    found = parse_json_object(text)
    assert found.value is None
    assert problem in found.problem


def test_truncated_object_missing_a_required_field_fails_validation_then_repair() -> None:
    model = _model(['{"label": "a", "ok": true', '{"label": "a", "score": 2'], "json_prompt")
    outcome = structured_outcome(model, Verdict, QUESTION)
    assert outcome.value == Verdict(label="a", score=2)
    assert [a.valid for a in outcome.attempts] == [False, True]
    assert "score: Field required" in outcome.attempts[0].problem
    assert outcome.attempts[1].lenient_repair == "closed"


# --- registry and methods ---------------------------------------------------------------------


def test_every_configurable_method_is_registered() -> None:
    assert set(METHODS) == {
        "function_calling",
        "json_prompt",
        "json_object",
        "json_object_schema",
        "json_schema",
        "json_grammar",
    }


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("stream", [True, False])
def test_each_method_returns_a_valid_object_first_try(
    method: StructuredMethod, stream: bool
) -> None:
    model = _model([_reply_for(method, {"label": "ok", "score": 7})], method, stream=stream)
    outcome = structured_outcome(model, Verdict, QUESTION)
    assert outcome.value == Verdict(label="ok", score=7)
    assert [(a.method, a.valid) for a in outcome.attempts] == [(method, True)]
    assert (outcome.attempts[0].streamed_chunks > 0) is stream


@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_repairs_once_then_raises(method: StructuredMethod) -> None:
    bad = [_reply_for(method, {"label": "ok", "score": 42})] * 2
    model = _model(bad, method)
    with pytest.raises(StructuredOutputError, match=r"^Verdict: no valid output after 2 attempt"):
        structured_call(model, Verdict, QUESTION)
    assert len(model.calls) == 2
    repair = model.calls[1]
    assert "less than or equal to 10" in str(repair[-1].content)
    assert '"score": 42' in str(repair[-2].content)


def test_function_calling_reads_json_written_as_content_instead_of_a_call() -> None:
    # llama-server with --jinja answers a forced tool call with the JSON as text.
    model = _model(['{"label": "ok", "score": 1}'], "function_calling")
    assert structured_call(model, Verdict, QUESTION) == Verdict(label="ok", score=1)


def test_a_streamed_call_whose_name_repeats_in_every_chunk_is_read() -> None:
    # llama-cpp-python sends the function name with every argument piece of a streamed call.
    pieces = ['{"label": "ok", ', '"score": 4}']
    merged = AIMessageChunk(content="")
    for piece in pieces:
        merged = merged + AIMessageChunk(
            content="",
            tool_call_chunks=[tool_call_chunk(name="Verdict", args=piece, id="c1", index=0)],
        )
    text = METHODS["function_calling"].reply_text(merged, Verdict)
    assert json.loads(text.json_text) == {"label": "ok", "score": 4}
    other = METHODS["function_calling"].reply_text(merged, Bounded)
    assert other.problem_without_json == "the reply did not call the function Bounded"


def _roles(env: dict[str, str], **transport: httpx.MockTransport) -> ModelRoles:
    """Roles on a fake endpoint (`transport` / `async_transport`)."""
    return ModelRoles(
        load_config(env=env), UsageLedger(), engine_url="http://127.0.0.1:9/v1", env={}, **transport
    )


def _requests_through_roles(method: StructuredMethod) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        message: dict[str, Any] = {"role": "assistant", "content": '{"label":"ok","score":2}'}
        if "tools" in seen[-1]:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "Verdict", "arguments": '{"label":"ok","score":2}'},
                    }
                ],
            }
        return chat_completion(message)

    roles = _roles({"GRSE_CRITIC_STRUCTURED_METHOD": method}, transport=httpx.MockTransport(handle))
    assert structured_call(roles.chat("critic"), Verdict, QUESTION) == Verdict(label="ok", score=2)
    return seen


def test_methods_send_their_own_request_shape() -> None:
    plain = _requests_through_roles("json_prompt")[0]
    assert "response_format" not in plain and "tools" not in plain
    assert "JSON schema" in plain["messages"][-1]["content"]
    assert _requests_through_roles("json_object")[0]["response_format"] == {"type": "json_object"}
    with_schema = _requests_through_roles("json_object_schema")[0]["response_format"]
    assert with_schema["type"] == "json_object"
    assert with_schema["schema"]["properties"]["score"]["maximum"] == 10
    json_schema = _requests_through_roles("json_schema")[0]["response_format"]
    assert json_schema["type"] == "json_schema"
    assert json_schema["json_schema"]["name"] == "Verdict"
    assert json_schema["json_schema"]["schema"]["required"] == ["label", "score"]
    grammar_only = _requests_through_roles("json_grammar")[0]
    assert grammar_only["response_format"] == with_schema
    assert grammar_only["messages"][-1]["content"] == (
        "Answer with ONE JSON object (a Verdict) with the fields label, score, ok."
    )
    forced = _requests_through_roles("function_calling")[0]
    # On the embedded engine a named choice becomes "required" with the call's JSON schema.
    assert forced["tool_choice"] == "required"
    assert forced["json_schema"]["properties"]["name"] == {"const": "Verdict"}
    assert forced["messages"][-1]["content"] == "Judge the answer."


# --- token budget -----------------------------------------------------------------------------


class Bounded(BaseModel):
    label: str = Field(max_length=40)
    kind: Literal["refine", "no_edit"]
    score: int
    tags: list[Annotated[str, Field(max_length=10)]] = Field(max_length=3)
    note: str | None = Field(default=None, max_length=20)


def test_token_budget_grows_with_the_schema_bounds_and_is_none_when_unbounded() -> None:
    budget = schema_token_budget(Bounded)
    assert budget is not None
    # The largest object is at least as long as its strings; the budget covers it in tokens.
    largest = Bounded(
        label="x" * 40, kind="no_edit", score=-(10**18), tags=["y" * 10] * 3, note="z" * 20
    )
    assert budget >= len(largest.model_dump_json()) / 2.5

    class Wider(Bounded):
        tags: list[Annotated[str, Field(max_length=10)]] = Field(max_length=30)

    wider = schema_token_budget(Wider)
    assert wider is not None and wider > budget
    assert schema_token_budget(Verdict) is None  # label has no maxLength
    assert schema_token_budget(critic_output_schema(True)) is None


def test_cap_is_lowered_only_when_the_schema_needs_less() -> None:
    budget = schema_token_budget(Bounded)
    assert budget is not None
    roles = ModelRoles(
        load_config(env={}), UsageLedger(), engine_url="http://127.0.0.1:9/v1", env={}
    )
    large = cap_parameters(roles.chat("critic", max_tokens=budget + 500), Bounded)
    assert large["max_tokens"] == budget and large["extra_body"]["max_tokens"] == budget
    assert cap_parameters(roles.chat("critic", max_tokens=budget - 1), Bounded) == {}
    assert cap_parameters(roles.chat("critic"), Verdict) == {}


# --- repetition stop --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("x" * 200, 1),
        ("intro " + SENTENCE * 4, len(SENTENCE)),
        (DIAGNOSIS * 4, len(DIAGNOSIS)),
    ],
)
def test_repetition_is_found_at_the_tail(text: str, period: int) -> None:
    found = find_repetition(text)
    assert found is not None and found.period == period and found.repeats >= 4


@pytest.mark.parametrize(
    "text",
    [
        '{"credits": [], "diagnoses": [{"agent": "a", "explanation": "one"}]}',
        "The retriever does not follow the conversation. " * 3,
        "    " * 10 + "indented",
    ],
)
def test_ordinary_text_is_not_a_repetition(text: str) -> None:
    assert find_repetition(text) is None


@pytest.mark.parametrize("method", list(METHODS))
def test_a_looping_reply_is_stopped_counted_and_repaired(method: StructuredMethod) -> None:
    looping: Any = (
        LOOP
        if method != "function_calling"
        else tool_call_message(
            "Verdict", {"label": "the model says the same thing " * 12, "score": 1}
        )
    )
    model = _model([looping, _reply_for(method, {"label": "ok", "score": 3})], method)
    outcome = asyncio.run(astructured_outcome(model, Verdict, QUESTION))
    assert outcome.value == Verdict(label="ok", score=3)
    first = outcome.attempts[0]
    assert not first.valid and "30-character passage" in first.runaway
    assert "give each item once" in str(model.calls[1][-1].content)
    shown = str(model.calls[1][-2].content)
    assert shown.count("the model says the same thing") <= 2 and shown.endswith("(stopped here)")


def _sse(pieces: list[str]) -> httpx.Response:
    """A chat-completion stream as llama-server sends it, with a final usage event."""
    events: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in pieces
    ]
    events[0]["choices"][0]["delta"]["role"] = "assistant"
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 9, "completion_tokens": len(pieces)}
    events.append({"choices": [], "usage": {**usage, "total_tokens": 9 + len(pieces)}})
    body = "".join(
        "data: "
        + json.dumps(
            {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", **e}
        )
        + "\n\n"
        for e in events
    )
    return httpx.Response(
        200,
        content=(body + "data: [DONE]\n\n").encode(),
        headers={"content-type": "text/event-stream"},
    )


def test_streamed_calls_keep_their_usage_and_the_ledger_counts_runaway_stops() -> None:
    replies = [
        _sse(['{"label": "', *["the model says the same thing "] * 30]),
        _sse(['{"label": "ok", ', '"score": 3}']),
    ]
    requests: list[dict[str, Any]] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(await request.aread()))
        return replies.pop(0)

    env = {"GRSE_CRITIC_STRUCTURED_METHOD": "json_object", "GRSE_CRITIC_STRUCTURED_STREAM": "1"}
    roles = _roles(env, async_transport=httpx.MockTransport(handle))
    outcome = asyncio.run(astructured_outcome(roles.chat("critic"), Verdict, QUESTION))
    assert outcome.value == Verdict(label="ok", score=3)
    assert all(r["stream"] and r["stream_options"] == {"include_usage": True} for r in requests)
    usage = roles.ledger.report().role("critic")
    assert (usage.calls, usage.failures, usage.runaway_stops) == (2, 1, 1)
    assert (usage.prompt_tokens, usage.completion_tokens) == (9, 2)


# --- a reply capped under a response_format -----------------------------------------------------


@pytest.mark.parametrize("method", ["json_grammar", "json_object", "json_schema"])
def test_a_capped_reply_under_a_response_format_is_read_not_raised(method: str) -> None:
    # openai's parse() raises LengthFinishReasonError for a reply that hit its cap; the role's
    # client returns it instead, so the cut-off object is closed leniently (or repaired).
    def handle(request: httpx.Request) -> httpx.Response:
        assert "response_format" in json.loads(request.content)
        cut_off = {"role": "assistant", "content": '{"label": "ok", "score": 2'}
        return chat_completion(cut_off, finish_reason="length", usage=(7, 4))

    roles = _roles(
        {"GRSE_CRITIC_STRUCTURED_METHOD": method}, async_transport=httpx.MockTransport(handle)
    )
    outcome = asyncio.run(astructured_outcome(roles.chat("critic"), Verdict, QUESTION))
    assert outcome.value == Verdict(label="ok", score=2)
    usage = roles.ledger.report().role("critic")
    assert (usage.calls, usage.failures) == (1, 0)
    assert (usage.prompt_tokens, usage.completion_tokens) == (7, 4)
