"""The embedded engine with the small model: chat, structured output, tool calls, prefix reuse,
accounting and no orphan after SIGKILL of `grse serve local`."""

from __future__ import annotations

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
from langchain_core.tools import tool
from pydantic import BaseModel

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import EngineSettings, default_cache_dir, load_config
from grse_graph.llm.engine import LocalEngine
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.structured import structured_call

pytestmark = pytest.mark.engine

REPO_ROOT = Path(__file__).resolve().parents[2]


def _roles(base_url: str) -> ModelRoles:
    return ModelRoles(load_config(env={}), UsageLedger(), engine_url=base_url)


def _long_prefix(topic: str, sentences: int = 60) -> str:
    """About 1,000 tokens of deterministic text."""
    return " ".join(
        f"Fact {i} about {topic}: the {topic} archive lists item {i * 7} "
        f"as stored in room {i % 13}."
        for i in range(sentences)
    )


class City(BaseModel):
    """A city and the country it is in."""

    name: str
    country: str


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"sunny in {city}"


def test_chat_completion(small_engine_url: str) -> None:
    roles = _roles(small_engine_url)
    reply = roles.chat("actor", max_tokens=24).invoke(
        [HumanMessage(content="Say hello in one short sentence.")]
    )
    assert isinstance(reply.content, str) and reply.content.strip()
    usage = roles.ledger.report().role("actor")
    assert usage.calls == 1 and usage.failures == 0
    assert usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 24


def test_structured_output_is_parsed(small_engine_url: str) -> None:
    roles = _roles(small_engine_url)
    # The actor role keeps function calling on the embedded engine (the critic's default there
    # is json_prompt, which the 135M model does not close within 64 tokens; every method is
    # covered per engine in test_structured_engine.py).
    city = structured_call(
        roles.chat("actor", max_tokens=64),
        City,
        [HumanMessage(content="Paris is the capital of France. Report the city and its country.")],
    )
    assert isinstance(city, City)
    assert city.name.strip() and city.country.strip()


def test_tool_call(small_engine_url: str) -> None:
    roles = _roles(small_engine_url)
    model = roles.chat("actor", max_tokens=64).bind_tools([get_weather])
    reply = model.invoke(
        [
            SystemMessage(content="You answer weather questions by calling get_weather."),
            HumanMessage(content="What is the weather in Paris?"),
        ]
    )
    assert reply.tool_calls, f"no tool call: {reply.content!r}"
    call = reply.tool_calls[0]
    assert call["name"] == "get_weather"
    assert isinstance(call["args"].get("city"), str)


def test_ledger_matches_server_usage(small_engine_url: str) -> None:
    roles = _roles(small_engine_url)
    messages = [HumanMessage(content="Name three colours.")]
    reply = roles.chat("optimizer", max_tokens=16).invoke(messages)
    reported = reply.response_metadata["token_usage"]
    usage = roles.ledger.report().role("optimizer")
    assert usage.prompt_tokens == reported["prompt_tokens"]
    assert usage.completion_tokens == reported["completion_tokens"]
    assert usage.calls == 1 and usage.retries == 0

    direct = httpx.post(
        f"{small_engine_url}/chat/completions",
        json={
            "model": "grse-local",
            "messages": [{"role": "user", "content": "Name three colours."}],
            "max_tokens": 1,
        },
        timeout=120,
    ).json()
    assert direct["usage"]["prompt_tokens"] == usage.prompt_tokens


@pytest.fixture(scope="module")
def logged_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    """A second small engine whose log this module reads (prefix reuse shows only there)."""
    log = tmp_path_factory.mktemp("engine") / "engine.log"
    settings = EngineSettings(model="small", n_ctx=4096, threads=2, cache_dir=default_cache_dir())
    with LocalEngine(settings, log_path=log) as engine:
        yield engine


def test_prefix_reuse_evaluates_fewer_prompt_tokens(logged_engine: LocalEngine) -> None:
    roles = _roles(logged_engine.base_url)
    model = roles.chat("actor", max_tokens=4)
    prefix = _long_prefix("harbour")
    before = logged_engine.prompt_eval_stats()
    model.invoke([SystemMessage(content=prefix), HumanMessage(content="Which room holds item 7?")])
    middle = logged_engine.prompt_eval_stats()
    model.invoke([SystemMessage(content=prefix), HumanMessage(content="Which room holds item 14?")])
    after = logged_engine.prompt_eval_stats()

    first, second = middle - before, after - middle
    prompt_tokens = roles.ledger.report().role("actor").prompt_tokens
    assert prompt_tokens > 1800, "each prompt should be about 1,000 tokens"
    assert first.evaluated_prompt_tokens > 900
    assert second.reused_prompt_tokens > 900
    assert second.evaluated_prompt_tokens < first.evaluated_prompt_tokens // 10


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_sigkill_of_grse_serve_leaves_no_engine(tmp_path: Path) -> None:
    env = {**os.environ, "GRSE_CACHE_DIR": str(default_cache_dir()), "PYTHONUNBUFFERED": "1"}
    grse = subprocess.Popen(
        [sys.executable, "-c", "from grse_graph.cli import main; main()",
         "serve", "local", "--model", "small", "--threads", "1", "--n-ctx", "1024"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )  # fmt: skip
    engine_pid: int | None = None
    base_url: str | None = None
    lines: list[str] = []
    try:
        assert grse.stdout is not None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and (engine_pid is None or base_url is None):
            line = grse.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip())
            if line.startswith("engine_pid:"):
                engine_pid = int(line.split(":", 1)[1])
            elif line.startswith("base_url:"):
                base_url = line.split(":", 1)[1].strip()
        assert engine_pid is not None and base_url is not None, "\n".join(lines)
        assert httpx.get(f"{base_url}/models", timeout=10).status_code == 200
        assert _alive(engine_pid)

        os.kill(grse.pid, signal.SIGKILL)
        grse.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(engine_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(engine_pid), f"engine {engine_pid} outlived its killed parent"
    finally:
        if grse.poll() is None:
            grse.kill()
        if engine_pid is not None and _alive(engine_pid):
            os.kill(engine_pid, signal.SIGKILL)
