"""Prefix slots: each chat request goes to the slot that last served its fixed prefix, one chat
request runs at a time per slot group, and everything else passes through unchanged."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from grse_graph.errors import EngineError
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import LLMConfig, load_config
from grse_graph.llm.engine_slots import slot_log_path
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.slot_routing import (
    PRIMING_TEXT,
    AsyncSlotRoutingTransport,
    SlotAffinity,
    SlotRouter,
    SlotRoutingTransport,
    prefix_key,
)
from tests.fakes import chat_completion

SLOTS = ("http://127.0.0.1:9000/v1", "http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1")


def _body(system: str, question: str, tools: list[Any] | None = None) -> bytes:
    payload: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ],
    }
    if tools is not None:
        payload["tools"] = tools
    return json.dumps(payload).encode()


def test_prefix_key_reads_the_tools_and_the_first_message_only() -> None:
    assert prefix_key(_body("retriever", "q1")) == prefix_key(_body("retriever", "q2"))
    assert prefix_key(_body("retriever", "q1")) != prefix_key(_body("reasoner", "q1"))
    tool = [{"type": "function", "function": {"name": "load_skill"}}]
    assert prefix_key(_body("retriever", "q1", tool)) != prefix_key(_body("retriever", "q1"))
    assert prefix_key(b"not json") is None
    assert prefix_key(b'{"messages": []}') is None
    assert prefix_key(b"[1, 2]") is None


def test_a_key_keeps_its_slot_and_a_new_key_takes_the_least_recently_used() -> None:
    affinity = SlotAffinity(2)
    assert affinity.slot_for("retriever") == 0
    assert affinity.slot_for("reasoner") == 1
    assert affinity.slot_for("retriever") == 0
    assert affinity.slot_for("reasoner") == 1
    # Slot 0 was used least recently, so the critic's prompt takes it and the retriever moves on.
    assert affinity.slot_for("critic") == 0
    assert affinity.slot_for("reasoner") == 1
    assert affinity.slot_for("retriever") == 0
    assert affinity.slot_for(None) == 1
    with pytest.raises(ValueError):
        SlotAffinity(0)


def test_a_key_that_lost_its_slot_counts_as_a_reload() -> None:
    # Three prefixes in a cycle on two slots: least recently used is always the next needed.
    cycling = SlotAffinity(2)
    for _ in range(3):
        for key in ("retriever", "reasoner", "critic"):
            cycling.slot_for(key)
    assert cycling.reloads == 6  # every request after the first three
    # Enough slots: nothing is evicted, and keys placed after `forget` start cold uncounted.
    steady = SlotAffinity(3)
    for _ in range(3):
        for key in ("retriever", "reasoner", "critic"):
            steady.slot_for(key)
    assert steady.reloads == 0
    cycling.forget()
    cycling.slot_for("retriever")
    cycling.slot_for("reasoner")
    assert cycling.reloads == 6


def _recording_server(calls: list[tuple[int | None, str]]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        calls.append((request.url.port, request.url.path))
        assert request.headers["Host"] == f"127.0.0.1:{request.url.port}"
        return chat_completion({"role": "assistant", "content": "ok"})

    return httpx.MockTransport(handle)


def test_chat_requests_follow_their_prefix_and_other_requests_go_to_the_first_slot() -> None:
    calls: list[tuple[int | None, str]] = []
    transport = SlotRoutingTransport(SlotRouter({SLOTS[0]: SLOTS}), _recording_server(calls))
    with httpx.Client(transport=transport) as client:
        url = f"{SLOTS[0]}/chat/completions"
        for question in ("q1", "q2"):
            client.post(url, content=_body("retriever", question))
            client.post(url, content=_body("reasoner", question))
        client.get(f"{SLOTS[0]}/models")
        client.post("http://127.0.0.1:9555/v1/chat/completions", content=_body("x", "q"))
    assert calls == [
        (9000, "/v1/chat/completions"),
        (9001, "/v1/chat/completions"),
        (9000, "/v1/chat/completions"),
        (9001, "/v1/chat/completions"),
        (9000, "/v1/models"),
        (9555, "/v1/chat/completions"),
    ]


def test_one_slot_group_is_a_plain_passthrough() -> None:
    assert SlotRouter({SLOTS[0]: SLOTS[:1]}).groups == ()


def test_one_chat_request_runs_at_a_time_across_the_slots() -> None:
    running = 0
    most = 0

    async def handle(request: httpx.Request) -> httpx.Response:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)
        running -= 1
        return chat_completion({"role": "assistant", "content": "ok"})

    async def main() -> list[int | None]:
        transport = AsyncSlotRoutingTransport(
            SlotRouter({SLOTS[0]: SLOTS}), httpx.MockTransport(handle)
        )
        async with httpx.AsyncClient(transport=transport) as client:
            url = f"{SLOTS[0]}/chat/completions"
            replies = await asyncio.gather(
                *(client.post(url, content=_body(f"agent {i % 3}", f"q{i}")) for i in range(6))
            )
        return [reply.request.url.port for reply in replies]

    ports = asyncio.run(main())
    assert most == 1
    assert sorted(ports) == [9000, 9000, 9001, 9001, 9002, 9002]


def test_the_gate_is_released_when_the_handler_fails() -> None:
    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    router = SlotRouter({SLOTS[0]: SLOTS})
    transport = SlotRoutingTransport(router, httpx.MockTransport(fail))
    with httpx.Client(transport=transport) as client:
        for _ in range(2):
            with pytest.raises(httpx.ConnectError):
                client.post(f"{SLOTS[0]}/chat/completions", content=_body("a", "q"))
    assert router.groups[0].gate.acquire(blocking=False)


def test_model_roles_send_each_agents_prompt_to_its_own_slot() -> None:
    calls: list[tuple[int | None, str]] = []
    server = _recording_server(calls)
    roles = ModelRoles(
        _config(repeatable=False),
        UsageLedger(),
        engine_url=SLOTS[0],
        engine_slots={SLOTS[0]: SLOTS[:2]},
        transport=server,
        async_transport=server,
    )
    with roles:
        chat = roles.chat("actor")
        for question in ("q1", "q2", "q3"):
            for agent in ("retriever", "reasoner"):
                chat.invoke([SystemMessage(content=agent), HumanMessage(content=question)])
        asyncio.run(chat.ainvoke([SystemMessage(content="reasoner"), HumanMessage("q4")]))
    assert [port for port, _ in calls] == [9000, 9001] * 3 + [9001]


def test_forgetting_places_the_next_keys_as_on_a_fresh_group() -> None:
    affinity = SlotAffinity(2)
    assert [affinity.slot_for(k) for k in ("a", "b", "a", "c")] == [0, 1, 0, 1]
    affinity.forget()
    assert [affinity.slot_for(k) for k in ("c", "a")] == [0, 1]


def _clearing_server(
    calls: list[tuple[int | None, str, Any]], status: int = 200
) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        calls.append((request.url.port, request.url.path, body))
        if request.url.path.endswith("/completions") and "messages" not in (body or {}):
            return httpx.Response(status, json={"choices": [{"text": "x"}]})
        return chat_completion({"role": "assistant", "content": "ok"})

    return httpx.MockTransport(handle)


def _config(*, repeatable: bool) -> LLMConfig:
    config = load_config(env={})
    engine = config.engine.model_copy(update={"repeatable_prompts": repeatable})
    return config.model_copy(update={"engine": engine})


def _roles(
    server: httpx.MockTransport, slots: dict[str, tuple[str, ...]], *, repeatable: bool = False
) -> ModelRoles:
    return ModelRoles(
        _config(repeatable=repeatable),
        UsageLedger(),
        engine_url=SLOTS[0],
        engine_slots=slots,
        transport=server,
        async_transport=server,
    )


def test_clearing_replaces_every_slots_cached_prompt_and_forgets_the_placement() -> None:
    calls: list[tuple[int | None, str, Any]] = []
    other = "http://127.0.0.1:9100/v1"
    roles = _roles(_clearing_server(calls), {SLOTS[0]: SLOTS[:2], other: (other,)})
    with roles:
        chat = roles.chat("actor")
        for agent in ("retriever", "reasoner"):
            chat.invoke([SystemMessage(content=agent), HumanMessage(content="q1")])
        assert asyncio.run(roles.clear_prefix_caches()) == 3
        # As on a fresh group: the first key after clearing takes slot 0, the retriever slot 1.
        for agent in ("reasoner", "retriever"):
            chat.invoke([SystemMessage(content=agent), HumanMessage(content="q2")])
    clearing = [(port, body) for port, path, body in calls if "messages" not in body]
    assert [port for port, _ in clearing] == [9000, 9001, 9100]
    assert all(body["prompt"] == "\n" and body["max_tokens"] == 1 for _, body in clearing)
    chats = [port for port, _, body in calls if "messages" in body]
    assert chats == [9000, 9001, 9000, 9001]
    # Engine upkeep, not a role's call: the ledger counts the four chat requests only.
    assert roles.ledger.report().role("actor").calls == 4


def test_repeatable_prompts_prepare_the_slot_before_each_chat_request() -> None:
    calls: list[tuple[int | None, str, Any]] = []
    tool = {"type": "function", "function": {"name": "load_skill", "parameters": {}}}
    with _roles(_clearing_server(calls), {SLOTS[0]: SLOTS[:2]}, repeatable=True) as roles:
        chat = roles.chat("actor").bind_tools([tool])
        for agent, question in (("retriever", "q1"), ("retriever", "q2"), ("reasoner", "q1")):
            chat.invoke([SystemMessage(content=agent), HumanMessage(content=question)])
        # A third prefix takes slot 0 (least recently used) from the retriever.
        chat.invoke([SystemMessage(content="critic"), HumanMessage(content="q1")])
        asyncio.run(chat.ainvoke([SystemMessage(content="critic"), HumanMessage("q2")]))
        # The same question again is primed again: only the fixed prefix is reused.
        chat.invoke([SystemMessage(content="critic"), HumanMessage(content="q2")])
        counted = roles.ledger.report().role("actor").calls

    def kind(body: Any) -> str:
        if "messages" not in body:
            return "clear"
        texts = [m["content"] for m in body["messages"]]
        if texts[-1] == PRIMING_TEXT:
            return " ".join(["prime", *texts[:-1]])
        return " ".join(["ask", *texts])

    assert [(port, kind(body)) for port, _, body in calls] == [
        (9000, "clear"),
        (9000, "prime retriever"),
        (9000, "ask retriever q1"),
        (9000, "prime retriever"),
        (9000, "ask retriever q2"),
        (9001, "clear"),
        (9001, "prime reasoner"),
        (9001, "ask reasoner q1"),
        (9000, "clear"),
        (9000, "prime critic"),
        (9000, "ask critic q1"),
        (9000, "prime critic"),
        (9000, "ask critic q2"),
        (9000, "prime critic"),
        (9000, "ask critic q2"),
    ]
    primes = [body for _, _, body in calls if kind(body).startswith("prime")]
    assert all(p["max_tokens"] == 1 and p["temperature"] == 0.0 for p in primes)
    assert all(p["tools"][0]["function"]["name"] == "load_skill" for p in primes)
    # The priming and clearing requests are engine upkeep: the ledger counts the six asks.
    assert counted == 6


def test_a_failed_priming_request_fails_the_call_and_releases_the_gate() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body.get("messages", [{}])[-1].get("content") == PRIMING_TEXT:
            return httpx.Response(503, json={"error": "busy"})
        return httpx.Response(200, json={"choices": [{"text": "x"}]})

    server = httpx.MockTransport(handle)
    router = SlotRouter({SLOTS[0]: SLOTS[:2]}, repeatable=True)
    transport = SlotRoutingTransport(router, server)
    with (
        httpx.Client(transport=transport) as client,
        pytest.raises(httpx.HTTPStatusError) as caught,
    ):
        client.post(f"{SLOTS[0]}/chat/completions", content=_body("retriever", "q1"))
    assert "preparing slot 127.0.0.1:9000" in str(caught.value)
    group = router.groups[0]
    assert group.gate.acquire(blocking=False)
    group.gate.release()
    # The slot counts as unprepared: the next request clears it again before priming.
    request = httpx.Request("POST", f"{SLOTS[0]}/chat/completions")
    body = _body("retriever", "q1")
    group.move(request, body)
    assert [step.url.path for step in group.preparation(request, body)] == [
        "/v1/completions",
        "/v1/chat/completions",
    ]


def test_a_failed_clearing_is_one_engine_error() -> None:
    calls: list[tuple[int | None, str, Any]] = []
    roles = _roles(_clearing_server(calls, status=500), {SLOTS[0]: SLOTS[:2]})
    failed = r"clearing the prompt cache of .*9000/v1 failed"
    with roles, pytest.raises(EngineError, match=failed):
        asyncio.run(roles.clear_prefix_caches())


def test_without_embedded_engines_there_is_nothing_to_clear() -> None:
    with ModelRoles(load_config(env={}), UsageLedger()) as roles:
        assert asyncio.run(roles.clear_prefix_caches()) == 0


def test_slot_logs_sit_beside_the_first() -> None:
    assert slot_log_path(Path("/r/engine.log"), 2) == Path("/r/engine.slot2.log")


def test_a_streamed_reply_holds_the_gate_until_it_is_read() -> None:
    def stream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=iter([b"data: 1\n\n", b"data: [DONE]\n\n"]))

    router = SlotRouter({SLOTS[0]: SLOTS})
    gate = router.groups[0].gate
    with httpx.Client(transport=SlotRoutingTransport(router, httpx.MockTransport(stream))) as c:
        request = c.build_request("POST", f"{SLOTS[0]}/chat/completions", content=_body("a", "q"))
        response = c.send(request, stream=True)
        assert not gate.acquire(blocking=False)
        assert b"".join(response.iter_bytes()).endswith(b"[DONE]\n\n")
        response.close()
    assert gate.acquire(blocking=False)
