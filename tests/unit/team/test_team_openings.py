"""A group's first-agent call made once with n choices: the real ChatOpenAI request over a mock
transport, the usage shares, the rollout that consumes a presampled reply, and the ledger."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from langchain_core.messages import AIMessage

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.provider import SamplingSettings
from grse_graph.llm.roles import ModelRoles
from grse_graph.skills import SkillLibrary
from grse_graph.team import AgentSpec, PresampledReply, TeamSpec, run_rollout, sample_openings
from grse_graph.team.rollout import StepUsage
from tests.fakes import FakeProvider, ScriptedChatModel
from tests.unit.team.team_fakes import FakeTask, question


def _response(contents: list[str], prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-n",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": c}}
            for i, c in enumerate(contents)
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _roles(requests: list[httpx.Request], response: dict[str, Any]) -> ModelRoles:
    def handle(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, json=response)

    async def ahandle(request: httpx.Request) -> httpx.Response:
        return handle(request)

    return ModelRoles(
        load_config(env={}),
        UsageLedger(),
        engine_url="http://127.0.0.1:9/v1",
        env={},
        transport=httpx.MockTransport(handle),
        async_transport=httpx.MockTransport(ahandle),
    )


def _team() -> TeamSpec:
    return TeamSpec(
        agents=[
            AgentSpec(
                name="retriever", role="Find evidence.", library=SkillLibrary.empty("retriever")
            ),
            AgentSpec(name="reasoner", role="Answer.", library=SkillLibrary.empty("reasoner")),
        ]
    )


def test_one_request_with_n_choices_returns_every_choice_with_a_usage_share() -> None:
    requests: list[httpx.Request] = []
    roles = _roles(requests, _response(["Candidate answer: A", "B", "C"], 100, 31))
    task = FakeTask([question("q1")])
    replies = asyncio.run(
        sample_openings(
            _team(), task, task.split("test")[0], roles, sampling=SamplingSettings(seed=3), n=3
        )
    )
    assert len(requests) == 1
    body = json.loads(requests[0].content)
    assert body["n"] == 3
    assert body["messages"][0]["content"].startswith("Find evidence.")
    assert [r.message.text for r in replies] == ["Candidate answer: A", "B", "C"]
    shares = [r.usage for r in replies]
    assert [s.prompt_tokens for s in shares] == [34, 33, 33]
    assert [s.completion_tokens for s in shares] == [11, 10, 10]
    assert [s.model_calls for s in shares] == [1, 0, 0]
    # The response's one usage is counted once, not once per choice.
    usage = roles.ledger.report().role("actor")
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 100, 31)


def test_a_server_that_ignores_n_yields_a_single_reply() -> None:
    requests: list[httpx.Request] = []
    roles = _roles(requests, _response(["only one"], 40, 2))
    task = FakeTask([question("q1")])
    replies = asyncio.run(
        sample_openings(
            _team(), task, task.split("test")[0], roles, sampling=SamplingSettings(), n=4
        )
    )
    assert [r.message.text for r in replies] == ["only one"]
    assert replies[0].usage.prompt_tokens == 40


def test_a_presampled_reply_replaces_the_first_agents_first_call() -> None:
    model = ScriptedChatModel(["Answer: Osterlin"])  # only the second agent calls the model
    task = FakeTask([question("q1")])
    opening = PresampledReply(
        message=AIMessage(content="Candidate answer: Osterlin"),
        usage=StepUsage(prompt_tokens=20, completion_tokens=4, model_calls=0, latency_s=0.5),
    )
    result = asyncio.run(
        run_rollout(
            _team(),
            task,
            task.split("test")[0],
            FakeProvider(models={"actor": model}),
            sampling=SamplingSettings(seed=1),
            rollout_id="r",
            opening=opening,
        )
    )
    assert len(model.calls) == 1
    first, second = result.steps
    assert first.output == "Candidate answer: Osterlin"
    assert first.usage == opening.usage
    assert "Candidate answer: Osterlin" in second.input
    assert result.reward == 1.0


def test_presampled_reply_round_trips_through_json() -> None:
    reply = PresampledReply(
        message=AIMessage(
            content="", tool_calls=[{"name": "grep", "args": {"pattern": "x"}, "id": "c1"}]
        ),
        usage=StepUsage(prompt_tokens=3),
    )
    again = PresampledReply.model_validate_json(reply.model_dump_json())
    assert again.message.tool_calls[0]["args"] == {"pattern": "x"}
    assert again == reply
