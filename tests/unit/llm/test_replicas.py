"""The router command and `grse serve vllm --replicas` (no process is started)."""

from __future__ import annotations

from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.llm.replicas import RouterSettings, router_command


def test_router_command_hashes_the_key_and_checks_health_every_second() -> None:
    command = router_command(
        ["http://127.0.0.1:1", "http://127.0.0.1:2"],
        host="127.0.0.1",
        port=9,
        settings=RouterSettings(),
    )
    joined = " ".join(command)
    assert command[0] == "vllm-router"
    assert "--worker-urls http://127.0.0.1:1 http://127.0.0.1:2 --policy consistent_hash" in joined
    assert "--health-check-interval-secs 1 --health-failure-threshold 1" in joined
    assert "--prometheus" not in joined  # the router's own default, for a box of its own


def test_replicas_started_here_name_their_router_s_metrics_port_on_loopback() -> None:
    # vllm-router binds 0.0.0.0:29000 for its metrics unless told, and exits when it is taken.
    command = router_command(
        ["http://127.0.0.1:1"], host="127.0.0.1", port=9, settings=RouterSettings(), metrics_port=7
    )
    assert " ".join(command).endswith("--prometheus-host 127.0.0.1 --prometheus-port 7")


def test_serve_vllm_replicas_prints_each_server_and_the_router_in_front() -> None:
    result = CliRunner().invoke(
        build_app(),
        ["serve", "vllm", "--model", "Qwen/Qwen2.5-7B-Instruct", "--replicas", "3"],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    servers = [line for line in lines if line.startswith("vllm serve ")]
    assert [s.split("--port ")[1].split()[0] for s in servers] == ["8001", "8002", "8003"]
    assert all("--enable-prefix-caching" in s and "--tool-call-parser hermes" in s for s in servers)
    router = next(line for line in lines if line.startswith("vllm-router "))
    assert "--port 8000" in router and "http://127.0.0.1:8003" in router
    assert lines[-1] == "# base_url = http://127.0.0.1:8000/v1"
