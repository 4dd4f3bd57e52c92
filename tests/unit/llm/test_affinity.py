"""The affinity key: every request of a unit of work carries it in the role's headers, sync and
async, concurrent units keep their own, and a team run outside the graph's context keeps it."""

from __future__ import annotations

import asyncio

import httpx
from langchain_core.messages import HumanMessage

from grse_graph.llm import load_config
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.affinity import affinity, question_key, stamp
from grse_graph.llm.roles import ModelRoles
from grse_graph.training.nodes.rollouts import isolated
from tests.unit.llm.test_llm_roles_accounting import Server, _completion


def _roles(server: Server, **env: str) -> ModelRoles:
    return ModelRoles(
        load_config(env=env),
        UsageLedger(),
        engine_url="http://127.0.0.1:9/v1",
        transport=httpx.MockTransport(server.handle),
        async_transport=httpx.MockTransport(server.ahandle),
    )


def _server(replies: int) -> Server:
    return Server([httpx.Response(200, json=_completion(5, 1, None)) for _ in range(replies)])


def test_a_unit_s_requests_carry_its_key_and_others_none() -> None:
    server = _server(2)
    model = _roles(server).chat("actor")
    with affinity(question_key("demo-mh-01")):
        model.invoke([HumanMessage(content="hi")])
    model.invoke([HumanMessage(content="hi")])
    assert server.requests[0].headers["X-Session-ID"] == "q:demo-mh-01"
    assert "X-Session-ID" not in server.requests[1].headers


def test_header_names_come_from_the_role_settings() -> None:
    server = _server(1)
    roles = _roles(server, GRSE_CRITIC_AFFINITY_HEADERS="X-SMG-Routing-Key, X-Session-ID")
    with affinity("k"):
        roles.chat("critic").invoke([HumanMessage(content="hi")])
    headers = server.requests[0].headers
    assert headers["X-SMG-Routing-Key"] == headers["X-Session-ID"] == "k"


def test_concurrent_units_keep_their_own_keys() -> None:
    server = _server(6)
    model = _roles(server).chat("actor")

    async def unit(key: str) -> None:
        with affinity(key):
            for _ in range(2):
                await model.ainvoke([HumanMessage(content=key)])

    async def main() -> None:
        await asyncio.gather(*(unit(k) for k in ("a", "b", "c")))

    asyncio.run(main())
    for request in server.requests:
        content = request.content.decode()
        assert f'"content":"{request.headers["X-Session-ID"]}"' in content.replace(" ", "")


def test_a_team_run_outside_the_graph_context_keeps_only_the_question_key() -> None:
    async def key_inside() -> str | None:
        request = httpx.Request("GET", "http://127.0.0.1:9/v1/models")
        stamp(request, ["X-Key"])
        return request.headers.get("X-Key")

    async def main() -> str | None:
        with affinity("outer"):
            return await isolated(key_inside(), "demo-mem-03")

    assert asyncio.run(main()) == "q:demo-mem-03"
