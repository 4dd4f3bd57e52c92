"""ModelRoles (the one client path) and UsageLedger, against a mocked OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from grse_graph.errors import ConfigError
from grse_graph.llm.accounting import PromptEvalStats, RoleUsage, UsageLedger, UsageReport
from grse_graph.llm.config import load_config
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.llm.roles import EMBEDDED_API_KEY, ModelRoles
from tests.fakes import ScriptedChatModel


def _completion(prompt: int, completion: int, cached: int | None) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hello"},
            }
        ],
        "usage": usage,
    }


class Server:
    """Scripted responses; records every request."""

    def __init__(self, responses: list[httpx.Response]) -> None:
        self.responses = responses
        self.requests: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.responses.pop(0)

    async def ahandle(self, request: httpx.Request) -> httpx.Response:
        return self.handle(request)

    def body(self, index: int) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads(self.requests[index].content)
        return payload


def _roles(server: Server, env: dict[str, str] | None = None, **config_env: str) -> ModelRoles:
    config = load_config(env={**config_env})
    return ModelRoles(
        config,
        UsageLedger(),
        engine_url="http://127.0.0.1:9/v1",
        env=env or {},
        transport=httpx.MockTransport(server.handle),
        async_transport=httpx.MockTransport(server.ahandle),
    )


def test_model_roles_is_a_chat_model_provider() -> None:
    assert isinstance(_roles(Server([])), ChatModelProvider)


def test_call_records_tokens_cached_tokens_and_time() -> None:
    server = Server([httpx.Response(200, json=_completion(120, 8, 100))])
    roles = _roles(server)
    reply = roles.chat("critic").invoke([HumanMessage(content="hi")])
    assert reply.content == "hello"
    usage = roles.ledger.report().role("critic")
    assert (usage.calls, usage.failures, usage.retries) == (1, 0, 0)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens) == (
        120,
        8,
        100,
    )
    assert usage.wall_time_s > 0
    assert roles.ledger.report().role("actor") == RoleUsage()
    assert str(server.requests[0].url) == "http://127.0.0.1:9/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {EMBEDDED_API_KEY}"


def test_retries_are_counted_from_http_attempts() -> None:
    server = Server(
        [
            httpx.Response(503, json={"error": "busy"}, headers={"retry-after-ms": "1"}),
            httpx.Response(200, json=_completion(10, 2, None)),
        ]
    )
    roles = _roles(server)
    roles.chat("actor").invoke("hi")
    usage = roles.ledger.report().role("actor")
    assert (usage.calls, usage.retries, usage.failures) == (1, 1, 0)
    assert usage.cached_prompt_tokens == 0


def test_failed_call_is_counted_as_failure() -> None:
    server = Server([httpx.Response(400, json={"error": {"message": "bad request"}})])
    roles = _roles(server)
    with pytest.raises(Exception, match="bad request"):
        roles.chat("optimizer").invoke("hi")
    usage = roles.ledger.report().role("optimizer")
    assert (usage.calls, usage.failures, usage.prompt_tokens) == (1, 1, 0)


def test_role_defaults_and_per_call_overrides_reach_the_request() -> None:
    server = Server([httpx.Response(200, json=_completion(5, 1, None)) for _ in range(2)])
    roles = _roles(server, GRSE_ACTOR_TOP_K="40", GRSE_ACTOR_TEMPERATURE="0.3")
    roles.chat("actor").invoke("hi")
    default_body = server.body(0)
    assert default_body["temperature"] == 0.3
    assert default_body["top_k"] == 40
    assert default_body["max_tokens"] == default_body["max_completion_tokens"] == 512
    assert default_body["model"] == "grse-local"
    roles.chat("actor", sampling=SamplingSettings.training(top_k=20, seed=3), max_tokens=64).invoke(
        "hi"
    )
    body = server.body(1)
    assert (body["temperature"], body["top_p"], body["top_k"], body["seed"]) == (1.0, 0.95, 20, 3)
    assert body["max_tokens"] == body["max_completion_tokens"] == 64


def test_legacy_max_tokens_can_be_switched_off() -> None:
    server = Server([httpx.Response(200, json=_completion(5, 1, None))])
    roles = _roles(server, GRSE_OPTIMIZER_LEGACY_MAX_TOKENS="false")
    roles.chat("optimizer").invoke("hi")
    assert "max_tokens" not in server.body(0)
    assert server.body(0)["max_completion_tokens"] == 800


def test_greedy_sampling_sends_no_top_k() -> None:
    server = Server([httpx.Response(200, json=_completion(5, 1, None))])
    roles = _roles(server, GRSE_CRITIC_TOP_K="40")
    roles.chat("critic", sampling=SamplingSettings.greedy()).invoke("hi")
    assert "top_k" not in server.body(0)
    assert server.body(0)["temperature"] == 0.0


def test_async_calls_are_accounted() -> None:
    server = Server([httpx.Response(200, json=_completion(7, 3, 2)) for _ in range(3)])
    roles = _roles(server)
    model = roles.chat("actor")

    async def run() -> None:
        await asyncio.gather(*(model.ainvoke("hi") for _ in range(3)))

    asyncio.run(run())
    usage = roles.ledger.report().role("actor")
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (3, 21, 9)
    assert (usage.cached_prompt_tokens, usage.retries) == (6, 0)


def test_remote_role_reads_key_from_named_variable() -> None:
    server = Server([httpx.Response(200, json=_completion(5, 1, None))])
    roles = _roles(
        server,
        env={"MY_KEY": "sk-secret"},
        GRSE_CRITIC_BASE_URL="http://gpu:8000/v1",
        GRSE_CRITIC_API_KEY_ENV="MY_KEY",
        GRSE_CRITIC_MODEL="Qwen/Qwen2.5-7B-Instruct",
    )
    roles.chat("critic").invoke("hi")
    assert str(server.requests[0].url) == "http://gpu:8000/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-secret"
    assert server.body(0)["model"] == "Qwen/Qwen2.5-7B-Instruct"


def test_missing_key_variable_is_a_config_error() -> None:
    roles = _roles(
        Server([]), GRSE_CRITIC_BASE_URL="http://gpu:8000/v1", GRSE_CRITIC_API_KEY_ENV="MY_KEY"
    )
    with pytest.raises(ConfigError, match="MY_KEY"):
        roles.chat("critic")


def test_embedded_role_without_engine_is_a_config_error() -> None:
    roles = ModelRoles(load_config(env={}), UsageLedger())
    with pytest.raises(ConfigError, match="GRSE_ACTOR_BASE_URL"):
        roles.chat("actor")


def test_concurrency_comes_from_the_role() -> None:
    roles = _roles(Server([]), GRSE_CRITIC_CONCURRENCY="2")
    assert (roles.concurrency("critic"), roles.concurrency("actor")) == (2, 4)


def test_ledger_callback_reads_usage_metadata_cache_read() -> None:
    ledger = UsageLedger()
    reply = AIMessage(
        content="x",
        usage_metadata={
            "input_tokens": 50,
            "output_tokens": 5,
            "total_tokens": 55,
            "input_token_details": {"cache_read": 30},
        },
    )
    model = ScriptedChatModel([reply], callbacks=[ledger.callback("critic")])
    model.invoke("hi")
    usage = ledger.report().role("critic")
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens) == (
        50,
        5,
        30,
    )
    assert usage.calls_without_usage == 0


def test_replies_without_usage_are_counted_not_zeroed_silently() -> None:
    ledger = UsageLedger()
    model = ScriptedChatModel(["no usage here"], callbacks=[ledger.callback("actor")])
    model.invoke("hi")
    usage = ledger.report().role("actor")
    assert (usage.calls, usage.calls_without_usage, usage.prompt_tokens) == (1, 1, 0)


def test_reports_add_and_round_trip_through_json(tmp_path: Path) -> None:
    left = UsageReport(roles={"actor": RoleUsage(calls=1, prompt_tokens=10, wall_time_s=1.5)})
    right = UsageReport(
        roles={
            "actor": RoleUsage(calls=2, prompt_tokens=5, retries=1),
            "critic": RoleUsage(calls=1, completion_tokens=4),
        },
        engine=PromptEvalStats(completions=2, evaluated_prompt_tokens=30),
    )
    summed = left + right
    assert summed.role("actor") == RoleUsage(calls=3, prompt_tokens=15, retries=1, wall_time_s=1.5)
    assert summed.total.calls == 4 and summed.total.completion_tokens == 4
    assert summed.engine == PromptEvalStats(completions=2, evaluated_prompt_tokens=30)

    ledger = UsageLedger()
    ledger.attach_engine_stats(lambda: PromptEvalStats(completions=1, reused_prompt_tokens=9))
    ScriptedChatModel(["x"], callbacks=[ledger.callback("actor")]).invoke("hi")
    path = tmp_path / "out" / "usage.json"
    ledger.write_json(path)
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert loaded["roles"]["actor"]["calls"] == 1
    assert loaded["total"]["calls"] == 1
    assert loaded["engine"]["reused_prompt_tokens"] == 9
    # llama-cpp-python reports no cached tokens, so the engine log's count stands in for them.
    assert loaded["cached_prompt_tokens"] == 9
    assert UsageReport.model_validate(loaded) == ledger.report()


def test_cached_prompt_tokens_prefer_what_the_servers_reported() -> None:
    engine = PromptEvalStats(completions=2, reused_prompt_tokens=40)
    reported = UsageReport(roles={"actor": RoleUsage(cached_prompt_tokens=30)}, engine=engine)
    assert reported.cached_prompt_tokens == 30
    assert UsageReport(roles={"actor": RoleUsage()}, engine=engine).cached_prompt_tokens == 40
    assert UsageReport(roles={"actor": RoleUsage()}).cached_prompt_tokens == 0


def test_bound_tools_ask_for_auto_tool_choice_explicitly() -> None:
    server = Server([httpx.Response(200, json=_completion(5, 1, None))])
    roles = _roles(server)

    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    roles.chat("actor").bind_tools([lookup]).invoke("hi")
    body = server.body(0)
    assert body["tool_choice"] == "auto"
    assert body["tools"][0]["function"]["name"] == "lookup"


def test_one_model_roles_serves_successive_event_loops() -> None:
    # httpx.AsyncClient pools connections on the event loop it first ran on; a CLI or training
    # run that calls asyncio.run more than once must still get working models from one
    # ModelRoles. A real loopback server is needed: mock transports keep no loop-bound pool.
    body = json.dumps(_completion(4, 1, None)).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        config = load_config(
            env={"GRSE_ACTOR_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1"}
        )
        roles = ModelRoles(config, UsageLedger(), env={})

        async def run() -> None:
            await roles.chat("actor").ainvoke("hi")

        asyncio.run(run())
        asyncio.run(run())
        assert roles.ledger.report().role("actor").calls == 2
        assert roles.ledger.report().role("actor").failures == 0
    finally:
        server.shutdown()


def test_accumulated_usage_adds_the_earlier_sessions_report(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    for _ in range(2):  # a run, then its resumption in a new process
        ledger = UsageLedger()
        ScriptedChatModel(["x"], callbacks=[ledger.callback("actor")]).invoke("hi")
        ledger.write_json(path, accumulate=True)
    assert json.loads(path.read_text(encoding="utf-8"))["roles"]["actor"]["calls"] == 2
    UsageLedger().write_json(path)  # without accumulate the file holds this session only
    assert json.loads(path.read_text(encoding="utf-8"))["roles"]["actor"]["calls"] == 0
