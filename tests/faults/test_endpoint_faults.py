"""A server that fails (500s, hangs, truncated bodies, invalid JSON, invalid tool calls) is met
with counted retries and timeouts through the real client path, and with one clear line when it
never recovers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from grse_graph.errors import ModelEndpointError, StructuredOutputError
from grse_graph.llm import ModelRoles, UsageLedger, astructured_call, load_config
from tests.fakeserver import FakeOpenAIServer, Fault, FaultKind, Match
from tests.faults.harness import TRAIN_FLAGS, run_grse

pytestmark = pytest.mark.faults

TIMEOUT_S = 0.4
TRANSPORT_FAULTS: tuple[FaultKind, ...] = ("http_500", "hang", "truncated", "invalid_json")


class Draft(BaseModel):
    name: str
    body: str


def _roles(server: FakeOpenAIServer, max_retries: int = 2) -> ModelRoles:
    config = load_config(env=server.env(timeout_s=TIMEOUT_S, max_retries=max_retries))
    return ModelRoles(config, UsageLedger())


def _ask(roles: ModelRoles) -> str:
    reply = asyncio.run(roles.chat("actor").ainvoke([HumanMessage("What colour is the barn?")]))
    return str(reply.content)


@pytest.mark.parametrize("kind", TRANSPORT_FAULTS)
def test_a_transient_fault_is_retried_and_counted(kind: FaultKind) -> None:
    faults = [Fault(kind, Match(role="actor"), first=1, count=2)]
    with FakeOpenAIServer(faults=faults, hang_s=TIMEOUT_S * 4) as server, _roles(server) as roles:
        assert _ask(roles).startswith("Answer:")
        usage = roles.ledger.report().role("actor")
        assert server.counts()["actor"] == 3
    assert (usage.calls, usage.retries, usage.failures) == (1, 2, 0)


@pytest.mark.parametrize("kind", TRANSPORT_FAULTS)
def test_a_fault_that_never_ends_gives_one_line_after_bounded_attempts(kind: FaultKind) -> None:
    faults = [Fault(kind, Match(role="actor"), first=1, count=10**6)]
    with FakeOpenAIServer(faults=faults, hang_s=TIMEOUT_S * 4) as server, _roles(server) as roles:
        with pytest.raises(ModelEndpointError) as raised:
            _ask(roles)
        usage = roles.ledger.report().role("actor")
        assert server.counts()["actor"] == 3
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"actor endpoint {server.base_url('actor')}: ")
    assert message.endswith("(gave up after 3 attempts)")
    assert (usage.calls, usage.retries, usage.failures) == (1, 2, 1)


def test_a_stream_from_a_failing_server_ends_in_the_same_one_line_error() -> None:
    faults = [Fault("http_500", Match(role="actor"), first=1, count=10**6)]

    async def stream(roles: ModelRoles) -> None:
        async for _ in roles.chat("actor").astream([HumanMessage("hi")]):
            pass

    with FakeOpenAIServer(faults=faults) as server, _roles(server, max_retries=1) as roles:
        with pytest.raises(ModelEndpointError, match=r"^actor endpoint .*: HTTP 500"):
            asyncio.run(stream(roles))
        assert server.counts()["actor"] == 2


def test_an_invalid_tool_call_gets_one_repair_round() -> None:
    faults = [Fault("invalid_tool_call", Match(role="optimizer", tool="Draft"), first=1, count=1)]
    with FakeOpenAIServer(faults=faults) as server, _roles(server) as roles:
        draft = asyncio.run(astructured_call(roles.chat("optimizer"), Draft, [HumanMessage("x")]))
        usage = roles.ledger.report().role("optimizer")
        assert server.counts()["optimizer"] == 2
    assert draft.name.startswith("answer-span-")
    assert (usage.calls, usage.retries, usage.failures) == (2, 0, 0)


def test_invalid_tool_calls_that_persist_give_a_typed_error() -> None:
    faults = [Fault("invalid_tool_call", Match(role="optimizer"), first=1, count=10**6)]
    with FakeOpenAIServer(faults=faults) as server, _roles(server) as roles:
        with pytest.raises(StructuredOutputError, match=r"^Draft: no valid output after 2 attempt"):
            asyncio.run(astructured_call(roles.chat("optimizer"), Draft, [HumanMessage("x")]))
        assert server.counts()["optimizer"] == 2


def test_train_survives_transient_faults_and_counts_them_in_usage_json(tmp_path: Path) -> None:
    faults = [
        Fault("http_500", Match(role="actor"), first=2),
        Fault("hang", Match(role="actor"), first=6),
        Fault("truncated", Match(role="critic"), first=1),
        Fault("invalid_json", Match(role="optimizer"), first=1),
        # The critic's structured reply is broken once: its repair round is a new call.
        Fault("invalid_tool_call", Match(role="critic", tool="CriticOutput"), first=2),
    ]
    with FakeOpenAIServer(faults=faults, hang_s=3.0) as server:
        env = server.env(timeout_s=1.0)
        done = run_grse(
            ["train", *TRAIN_FLAGS, "--iterations", "1", "--out", "run"], env, cwd=tmp_path
        )
    assert done.returncode == 0, done.stderr[-2000:]
    usage = json.loads((tmp_path / "run" / "usage.json").read_text())["roles"]
    assert (usage["actor"]["retries"], usage["actor"]["failures"]) == (2, 0)
    assert (usage["critic"]["retries"], usage["optimizer"]["retries"]) == (1, 1)
    critiques = [json.loads(line) for line in (tmp_path / "run/critiques.jsonl").open()]
    assert all(c["result"] is not None for c in critiques)


def test_train_against_a_dead_server_stops_with_one_line(tmp_path: Path) -> None:
    faults = [Fault("http_500", Match(role="actor"), first=1, count=10**6)]
    with FakeOpenAIServer(faults=faults) as server:
        done = run_grse(
            ["train", *TRAIN_FLAGS, "--iterations", "1", "--out", "run"],
            server.env(max_retries=1),
            cwd=tmp_path,
        )
        attempts = server.counts()["actor"]
    assert done.returncode == 1
    (line,) = done.error_lines
    assert line.startswith(f"error: actor endpoint {server.base_url('actor')}: HTTP 500")
    assert line.endswith("(gave up after 2 attempts)")
    # Bounded: 2 HTTP attempts per call, each unit tried max_attempts (2) times, then the run
    # stops (the concurrency is 1, so at most one more unit had started).
    assert 4 <= attempts <= 8


def test_eval_records_each_question_a_dead_server_fails_then_resumes(tmp_path: Path) -> None:
    args = ["eval", "--task", "demo", "--split", "test", "--limit", "2", "--out", "ev"]
    dead = [Fault("http_500", Match(role="actor"), first=1, count=10**6)]
    with FakeOpenAIServer(faults=dead) as server:
        failed = run_grse(args, server.env(max_retries=1), cwd=tmp_path)
        assert failed.returncode == 0, failed.stderr[-2000:]
        predictions = [json.loads(line) for line in (tmp_path / "ev/predictions.jsonl").open()]
        assert [p["failed"] for p in predictions] == [True, True]
        for prediction in predictions:
            error = prediction["error"]
            assert error.startswith("ModelEndpointError: actor endpoint ") and "\n" not in error
        usage = json.loads((tmp_path / "ev/usage.json").read_text())["roles"]["actor"]
        assert (usage["failures"], usage["retries"]) == (2, 2)

        server.faults.clear()  # the server recovers; the same endpoint, so the run resumes
        resumed = run_grse(args, server.env(max_retries=1), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((tmp_path / "ev/summary.json").read_text())
    assert summary["failed"] == 0
