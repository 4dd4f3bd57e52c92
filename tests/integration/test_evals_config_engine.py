"""A paper table through `--config`, the path a researcher takes with vLLM: an OpenAI-compatible
server started on its own (`grse serve local`, on loopback), a grse TOML naming it for every
role, and `python evals/<script> --smoke --config TOML --out DIR` as a user types it. The table
must run on that server (no embedded engine of its own) and fill every cell it runs.

    python -m pytest -m engine tests/integration/test_evals_config_engine.py
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from grse_graph.llm.engine import ENGINE_MODEL_ALIAS
from tests.integration.test_evals_smoke_engine import (
    REPO,
    run_smoke_table,
    user_environment,
)

SERVER_START_S = 300
"""A guard against a server that never says where it listens, not a bound."""
TABLE = "table4_5"
"""The cheapest table that trains (29 calls at the smoke size against the fake server); the
engine smoke test leaves it to this test."""


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


@pytest.fixture()
def served_base_url() -> Iterator[str]:
    """`grse serve local --model small` in a process of its own; its printed base URL."""
    command = ["serve", "local", "--model", "small", "--port", "0", "--threads", "2"]
    server = subprocess.Popen(
        [sys.executable, "-c", "from grse_graph.cli import main; main()", *command],
        cwd=REPO,
        env=user_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    printed: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(server.stdout, printed), daemon=True).start()
    try:
        seen: list[str] = []
        while True:
            try:
                line = printed.get(timeout=SERVER_START_S)
            except queue.Empty:
                pytest.fail(f"grse serve local printed no base_url: {seen}", pytrace=False)
            seen.append(line)
            if line.startswith("base_url: "):
                yield line.removeprefix("base_url: ").strip()
                break
            if server.poll() is not None:
                pytest.fail(f"grse serve local exited: {''.join(seen)}", pytrace=False)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.mark.engine
def test_a_smoke_table_runs_through_config_on_a_server_started_on_its_own(
    served_base_url: str, tmp_path: Path
) -> None:
    config = tmp_path / "served.toml"
    config.write_text(
        "".join(
            f'[{role}]\nbase_url = "{served_base_url}"\nmodel = "{ENGINE_MODEL_ALIAS}"\n'
            for role in ("actor", "critic", "optimizer")
        ),
        encoding="utf-8",
    )
    out = tmp_path / "results"
    run_smoke_table(TABLE, out, "--config", str(config))
    # Every run of the table went to the served endpoint, none to an engine of its own.
    assert list((out / "runs").iterdir())
    assert not list((out / "runs").glob("**/engine*.log")), "a run started its own engine"
