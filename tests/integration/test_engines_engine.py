"""The embedded engine (xllamacpp) with the small model: chat, structured output, a tool call,
``n`` samples, prefix reuse from the server's own report, repeatable greedy answers through the
slot pinning, and no engine left behind when the parent process is killed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import EngineSettings, default_cache_dir, load_config
from grse_graph.llm.engine import LocalEngine
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.structured import structured_call
from grse_graph.team.agent import AgentTurnInput, run_agent_turn
from tests.integration.engine_support import City, alive, get_weather, long_prefix

pytestmark = pytest.mark.engine

SAMPLES = 4


def _settings(model: str = "small") -> EngineSettings:
    return EngineSettings(
        model=model, engine="xllamacpp", n_ctx=4096, threads=2, cache_dir=default_cache_dir()
    )


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    log = tmp_path_factory.mktemp("engine") / "engine.log"
    with LocalEngine(_settings(), log_path=log) as running:
        assert running.engine_name == "xllamacpp"
        yield running


def _roles(engine: LocalEngine, overrides: dict[str, object] | None = None) -> ModelRoles:
    config = load_config(env={}, overrides=overrides)
    return ModelRoles(config, UsageLedger(), engine_url=engine.base_url)


def test_chat_completion(engine: LocalEngine) -> None:
    roles = _roles(engine)
    reply = roles.chat("actor", max_tokens=24).invoke(
        [HumanMessage(content="Say hello in one short sentence.")]
    )
    assert isinstance(reply.content, str) and reply.content.strip()
    usage = roles.ledger.report().role("actor")
    assert usage.calls == 1 and usage.failures == 0
    assert usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 24


def test_structured_output_into_a_pydantic_model(engine: LocalEngine) -> None:
    roles = _roles(engine, {"critic.structured_method": "json_schema"})
    city = structured_call(
        roles.chat("critic", max_tokens=64),
        City,
        [HumanMessage(content="Paris is the capital of France. Report the city and its country.")],
    )
    assert isinstance(city, City)
    assert city.name.strip() and city.country.strip()


def test_tool_call(tmp_path: Path) -> None:
    # Through the agent loop, as a team runs it. SmolLM2's chat template has no tools, so the
    # call runs on the default model (Qwen2.5-Coder), which often writes the call as JSON text
    # that the role's client reads back (`llm.tool_transcript`).
    turn = AgentTurnInput(
        index=0,
        agent="forecaster",
        system_prompt="You answer weather questions by calling get_weather.",
        user_input="What is the weather in Paris?",
        task_tools=(get_weather,),
        max_tool_calls=1,
    )
    with LocalEngine(_settings("default"), log_path=tmp_path / "engine.log") as engine:
        model = _roles(engine).chat("actor", max_tokens=64)
        step = asyncio.run(run_agent_turn(model, turn))
    assert step.tool_calls, f"no tool call: {step.output!r}"
    call = step.tool_calls[0]
    assert call.name == "get_weather" and call.error is None
    assert isinstance(call.arguments.get("city"), str)
    assert call.result == f"sunny in {call.arguments['city']}"


def test_n_samples_share_one_request(engine: LocalEngine) -> None:
    body = {
        "model": engine.model_alias,
        "messages": [{"role": "user", "content": "Invent a name for a new colour."}],
        "n": SAMPLES,
        "max_tokens": 24,
        "temperature": 1.0,
    }
    reply = httpx.post(f"{engine.base_url}/chat/completions", json=body, timeout=300)
    reply.raise_for_status()
    choices = [choice["message"]["content"] for choice in reply.json()["choices"]]
    assert len(choices) == SAMPLES
    assert len(set(choices)) == SAMPLES, f"samples not distinct: {choices}"


def test_prefix_reuse_from_the_engines_own_report(engine: LocalEngine) -> None:
    """Reuse read from the engine's log, its usage block and its /metrics counter."""
    roles = _roles(engine)
    model = roles.chat("actor", max_tokens=4)
    prefix = long_prefix("harbour")
    before = engine.prompt_eval_stats()
    model.invoke([SystemMessage(content=prefix), HumanMessage(content="Which room holds item 7?")])
    middle = engine.prompt_eval_stats()
    cached_before = roles.ledger.report().role("actor").cached_prompt_tokens
    model.invoke([SystemMessage(content=prefix), HumanMessage(content="Which room holds item 14?")])
    after = engine.prompt_eval_stats()

    first, second = middle - before, after - middle
    assert first.completions == 1 and second.completions == 1
    assert first.evaluated_prompt_tokens > 900
    assert second.reused_prompt_tokens > 900
    assert second.evaluated_prompt_tokens < first.evaluated_prompt_tokens // 10
    cached = roles.ledger.report().role("actor").cached_prompt_tokens - cached_before
    assert cached == second.reused_prompt_tokens
    metrics = httpx.get(engine.base_url.removesuffix("/v1") + "/metrics", timeout=10).text
    counter = next(
        line for line in metrics.splitlines()
        if line.startswith("llamacpp:prompt_tokens_cached_total ")
    )  # fmt: skip
    assert float(counter.split()[1]) == after.reused_prompt_tokens


def test_a_pinned_greedy_request_answers_the_same_after_any_history(engine: LocalEngine) -> None:
    """Through the slot pinning (as sessions use the engine): the same greedy question answers
    the same alone, after other questions on its prefix, after other prefixes took the slots,
    and beside concurrent requests."""
    roles = ModelRoles(
        load_config(env={}),
        UsageLedger(),
        engine_url=engine.base_url,
        engine_slots={engine.base_url: 2},
    )
    model = roles.chat("actor", max_tokens=48)
    prefix = long_prefix("harbour")

    def ask(system: str, question: str) -> str:
        reply = model.invoke([SystemMessage(content=system), HumanMessage(content=question)])
        return str(reply.content)

    question = "Which rooms hold items 3 and 9, and what are they?"
    answers = [ask(prefix, question)]
    ask(prefix, "Which room holds item 12?")
    answers.append(ask(prefix, question))
    ask(long_prefix("station"), "Which room holds item 1?")
    ask(long_prefix("airport"), "Which room holds item 2?")
    answers.append(ask(prefix, question))

    async def beside_others() -> list[str]:
        replies = await asyncio.gather(
            model.ainvoke([SystemMessage(content=prefix), HumanMessage(content=question)]),
            model.ainvoke(
                [SystemMessage(content=long_prefix("market")), HumanMessage(content="Item 5?")]
            ),
            model.ainvoke([SystemMessage(content=prefix), HumanMessage(content="Item 8?")]),
        )
        return [str(replies[0].content)]

    answers += asyncio.run(beside_others())
    assert len(set(answers)) == 1, answers
    assert answers[0].strip()


_CHILD = """
import sys, time
from grse_graph.llm.config import EngineSettings
from grse_graph.llm.engine import LocalEngine
engine = LocalEngine(EngineSettings.model_validate_json(sys.argv[1])).start()
print(f"engine_pid: {engine.pid} {engine.engine_name}", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_killed_parent_leaves_no_engine() -> None:
    name = "xllamacpp"
    settings = _settings().model_copy(update={"threads": 1, "n_ctx": 1024, "n_parallel": 1})
    parent = subprocess.Popen(
        [sys.executable, "-c", _CHILD, settings.model_dump_json()],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    engine_pid: int | None = None
    lines: list[str] = []
    try:
        assert parent.stdout is not None
        for line in parent.stdout:
            lines.append(line.rstrip())
            if line.startswith("engine_pid:"):
                pid, started = line.split()[1:3]
                engine_pid = int(pid)
                assert started == name
                break
        assert engine_pid is not None, "\n".join(lines)
        assert alive(engine_pid)

        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(engine_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(engine_pid), f"{name} {engine_pid} outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if engine_pid is not None and alive(engine_pid):
            os.kill(engine_pid, signal.SIGKILL)
