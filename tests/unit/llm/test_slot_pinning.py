"""Slot pinning on a recorded fake server: each prefix keeps its slot (``id_slot`` in the body),
and with repeatable prompts every chat request follows its own priming request on that slot,
one request at a time."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from grse_graph.llm.slot_pinning import (
    PRIMING_TEXT,
    AsyncSlotPinningTransport,
    SlotPinning,
    SlotPinningTransport,
)

BASE = "http://127.0.0.1:5000/v1"
REPLY = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}


def _chat(system: str, user: str, **extra: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return {"model": "m", "messages": messages, **extra}


def _recorder(seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        try:
            body = json.loads(request.content)
        except json.JSONDecodeError:
            body = {"raw": request.content.decode()}
        seen.append({"path": request.url.path, **body})
        return httpx.Response(200, json=REPLY)

    return httpx.MockTransport(handle)


def _send(pinning: SlotPinning, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    with httpx.Client(transport=SlotPinningTransport([pinning], _recorder(seen))) as client:
        for body in bodies:
            assert client.post(f"{BASE}/chat/completions", json=body).json() == REPLY
    return seen


def test_each_prefix_keeps_its_slot_and_a_new_one_takes_the_least_recently_used() -> None:
    pinning = SlotPinning(BASE, 2, repeatable=False)
    seen = _send(
        pinning,
        [_chat("A", "1"), _chat("B", "1"), _chat("A", "2"), _chat("C", "1"), _chat("A", "3")],
    )
    assert [s["id_slot"] for s in seen] == [0, 1, 0, 1, 0]
    assert all(s["messages"][1]["content"] != PRIMING_TEXT for s in seen)  # no priming
    assert pinning.affinity.reloads == 0
    _send(pinning, [_chat("B", "2")])  # B lost slot 1 to C: its prefix is computed again
    assert pinning.affinity.reloads == 1


def test_repeatable_primes_the_slot_before_each_request_from_scratch_on_a_new_prefix() -> None:
    pinning = SlotPinning(BASE, 2, repeatable=True)
    seen = _send(pinning, [_chat("A", "1"), _chat("A", "2"), _chat("B", "1"), _chat("A", "3")])
    primings, requests = seen[0::2], seen[1::2]
    assert [r["messages"][1]["content"] for r in requests] == ["1", "2", "1", "3"]
    for priming, request in zip(primings, requests, strict=True):
        assert priming["messages"] == [request["messages"][0], {"role": "user", "content": "⁂"}]
        assert priming["id_slot"] == request["id_slot"]
        assert (priming["max_tokens"], priming["temperature"]) == (1, 0.0)
    # A slot's first priming for a prefix ignores its cache; later ones reuse that computation.
    assert [p["cache_prompt"] for p in primings] == [False, True, False, True]


def test_a_request_for_several_samples_leaves_the_other_slots_unprimed() -> None:
    pinning = SlotPinning(BASE, 3, repeatable=True)
    seen = _send(pinning, [_chat("A", "1"), _chat("B", "1", n=4), _chat("A", "2")])
    # B's samples ran on the other slots: A's slot is primed from scratch again.
    assert [seen[i]["cache_prompt"] for i in (0, 2, 4)] == [False, False, False]


def test_other_requests_and_other_servers_pass_unchanged() -> None:
    pinning = SlotPinning(BASE, 2, repeatable=True)
    seen: list[dict[str, Any]] = []
    with httpx.Client(transport=SlotPinningTransport([pinning], _recorder(seen))) as client:
        client.post(f"{BASE}/completions", json={"prompt": "x"})
        client.post("http://gpu:8000/v1/chat/completions", json=_chat("A", "1"))
        client.post(f"{BASE}/chat/completions", content=b"not json")
    assert [s.get("id_slot") for s in seen] == [None, None, None]
    assert seen[2] == {"path": "/v1/chat/completions", "raw": "not json"}


def test_repeatable_requests_run_one_at_a_time_and_free_requests_overlap() -> None:
    for repeatable, most in ((True, 1), (False, 4)):
        pinning = SlotPinning(BASE, 4, repeatable=repeatable)
        running = peak = 0

        async def handle(request: httpx.Request) -> httpx.Response:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.02)
            running -= 1
            return httpx.Response(200, json=REPLY)

        async def main(pinning: SlotPinning) -> None:
            transport = AsyncSlotPinningTransport([pinning], httpx.MockTransport(handle))
            async with httpx.AsyncClient(transport=transport) as client:
                await asyncio.gather(
                    *(
                        client.post(f"{BASE}/chat/completions", json=_chat(str(i), "q"))
                        for i in range(4)
                    )
                )

        asyncio.run(main(pinning))
        assert peak == most, repeatable
