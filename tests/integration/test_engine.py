"""The embedded engine behind the CLI and the ledger, with the small model: the ledger's token
counts match the server's, and SIGKILL of `grse serve local` leaves no engine behind (chat,
structured output, tool calls, `n` and prefix reuse per engine: `test_engines_engine.py`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import HumanMessage

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import default_cache_dir, load_config
from grse_graph.llm.roles import ModelRoles
from tests.integration.engine_support import alive

pytestmark = pytest.mark.engine

REPO_ROOT = Path(__file__).resolve().parents[2]


def _roles(base_url: str) -> ModelRoles:
    return ModelRoles(load_config(env={}), UsageLedger(), engine_url=base_url)


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
        assert alive(engine_pid)

        os.kill(grse.pid, signal.SIGKILL)
        grse.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(engine_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(engine_pid), f"engine {engine_pid} outlived its killed parent"
    finally:
        if grse.poll() is None:
            grse.kill()
        if engine_pid is not None and alive(engine_pid):
            os.kill(engine_pid, signal.SIGKILL)
