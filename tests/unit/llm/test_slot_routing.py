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

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.engine_slots import slot_log_path
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.slot_routing import (
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
    config = load_config(env={})
    roles = ModelRoles(
        config,
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
