"""A required call of one tool: on the embedded engine the request also carries the call's JSON
schema (llama.cpp's server does not constrain "required"), and the reply, a JSON object naming
the tool, comes back as the call; a remote role's request is left as the API defines it."""

from __future__ import annotations

import json

import httpx
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from grse_graph.llm import load_config
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.roles import ModelRoles
from tests.unit.llm.test_llm_roles_accounting import Server, _completion


@tool
def grep(pattern: str) -> str:
    """Search the conversation."""
    return pattern


def _reply(content: str) -> httpx.Response:
    completion = _completion(5, 1, None)
    completion["choices"][0]["message"]["content"] = content
    return httpx.Response(200, json=completion)


def _ask(overrides: dict[str, object]) -> tuple[dict[str, object], AIMessage]:
    server = Server([_reply('{"name": "grep", "arguments": {"pattern": "Pellory"}}')])
    roles = ModelRoles(
        load_config(env={}, overrides=overrides),
        UsageLedger(),
        engine_url="http://127.0.0.1:9/v1",
        transport=httpx.MockTransport(server.handle),
        async_transport=httpx.MockTransport(server.ahandle),
    )
    model = roles.chat("actor").bind_tools([grep], tool_choice="required")
    reply = model.invoke([HumanMessage(content="When did Nadia move?")])
    assert isinstance(reply, AIMessage)
    return json.loads(server.requests[0].content), reply


def test_the_embedded_engine_gets_the_call_schema_and_the_reply_is_the_call() -> None:
    body, reply = _ask({})
    schema = body["json_schema"]
    assert isinstance(schema, dict)
    assert schema["properties"]["name"] == {"const": "grep"}
    assert schema["properties"]["arguments"]["required"] == ["pattern"]
    assert body["tool_choice"] == "required"
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("grep", {"pattern": "Pellory"})]


def test_a_remote_role_sends_no_schema() -> None:
    body, _ = _ask({"actor.base_url": "http://gpu:8000/v1"})
    assert "json_schema" not in body and body["tool_choice"] == "required"


def test_a_remote_llama_server_role_gets_the_schema_when_set() -> None:
    body, reply = _ask({"actor.base_url": "http://gpu:8080/v1", "actor.forced_call": "json_schema"})
    assert body["json_schema"]["properties"]["name"] == {"const": "grep"}
    assert [c["name"] for c in reply.tool_calls] == ["grep"]


def test_the_embedded_engine_can_be_sent_the_plain_choice() -> None:
    body, _ = _ask({"actor.forced_call": "tool_choice"})
    assert "json_schema" not in body and body["tool_choice"] == "required"
