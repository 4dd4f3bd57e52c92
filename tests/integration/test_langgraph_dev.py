"""`langgraph dev` serves both graphs of `langgraph.json`; through `langgraph_sdk` the `team`
graph answers one demo question and the `training` graph runs a tiny configuration, the team on
the embedded small-model engine (the training's critic and optimizer on the scripted server, so
that a parsed critique reaches the gate), configured through each assistant's context (the
server gets no GRSE_* variable)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from grse_graph.methods.grse.method import CritiqueRecord
from grse_graph.tasks import load_task
from grse_graph.team import default_team
from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
API_LINE = re.compile(r"API:\s*(http://127\.0\.0\.1:\d+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STARTUP_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DevServer:
    """`langgraph dev` in its own process group; its output collected by a reader thread."""

    def __init__(self, log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRSE_")}
        env.update(LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false")
        self.log = log
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [
                "langgraph",
                "dev",
                "--host",
                "127.0.0.1",
                "--port",
                str(_free_port()),
                "--no-browser",
                "--no-reload",
                "--config",
                str(REPO / "langgraph.json"),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.log.open("w", encoding="utf-8") as handle:
            for line in self.process.stdout:
                self.lines.append(line)
                handle.write(line)
                handle.flush()

    def url(self) -> str:
        """The API URL the server printed (it moves to another port when the asked one is busy)."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = API_LINE.search(ANSI.sub("", line))
                if found:
                    return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.5)
        pytest.fail("langgraph dev did not start:\n" + "".join(self.lines[-40:]), pytrace=False)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._reader.join(timeout=10)


@pytest.fixture()
def dev_server(tmp_path: Path) -> Any:
    server = DevServer(tmp_path / "langgraph-dev.log")
    try:
        yield server
    finally:
        server.stop()


def _endpoint(url: str, max_tokens: int, model: str = "grse-local") -> dict[str, Any]:
    return {"base_url": url, "model": model, "max_tokens": max_tokens}


@pytest.fixture()
def scripted() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.mark.engine
def test_langgraph_dev_runs_the_team_and_a_tiny_training_configured_by_context(
    dev_server: DevServer, small_engine_url: str, scripted: FakeOpenAIServer, tmp_path: Path
) -> None:
    client = get_sync_client(url=dev_server.url())
    graphs = {a["graph_id"] for a in client.assistants.search(limit=20)}
    assert {"team", "training"} <= graphs

    task = load_task("demo")
    question = next(iter(task.split("test")))
    team = client.assistants.create(
        graph_id="team",
        context={"task": "demo", "actor": _endpoint(small_engine_url, 64)},
    )
    thread = client.threads.create()
    out = client.runs.wait(
        thread["thread_id"],
        team["assistant_id"],
        input={"messages": [{"role": "user", "content": question.question}]},
    )
    assert isinstance(out, dict), out
    assert out["question_id"] == question.id
    assert [s["agent"] for s in out["steps"]] == default_team(task).agent_names
    assert isinstance(out["answer"], str) and out["messages"][-1]["content"] == out["answer"]
    assert 0.0 <= out["reward"] <= 1.0

    training = client.assistants.create(
        graph_id="training",
        context={
            "task": "demo",
            "actor": _endpoint(small_engine_url, 64),
            "critic": _endpoint(scripted.base_url("critic"), 300, "fake"),
            "optimizer": _endpoint(scripted.base_url("optimizer"), 300, "fake"),
            "runs_dir": str(tmp_path / "runs"),
            "train": {
                "iterations": 1,
                "batch_size": 1,
                "validation_size": 1,
                "concurrency": 2,
                "actor_max_tokens": 64,
                "method": {
                    "name": "grse",
                    "group_size": 2,
                    "payload_limits": {
                        "step_output_chars": 400,
                        "tool_result_chars": 300,
                        "step_input_chars": 600,
                    },
                },
            },
        },
    )
    thread = client.threads.create()
    progress: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    for part in client.runs.stream(
        thread["thread_id"], training["assistant_id"], input={}, stream_mode=["custom", "values"]
    ):
        if part.event == "custom":
            progress.append(part.data["progress"])
        elif part.event == "values":
            final = part.data
        elif part.event == "error":
            pytest.fail(f"training run failed: {part.data}", pytrace=False)
    run_dir = tmp_path / "runs" / thread["thread_id"]
    assert final["run_dir"] == str(run_dir)
    assert final["iterations_done"] == 1
    assert (run_dir / "gate.jsonl").exists() and (run_dir / "report.md").exists()
    (critique,) = RunFolder(run_dir).credits(CritiqueRecord).read()
    assert critique.error is None and critique.result is not None, critique.error
    assert {"rollouts", "validation"} <= {event["stage"] for event in progress}
    assert "BlockingError" not in "".join(dev_server.lines)
