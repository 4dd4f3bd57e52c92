"""Replicas behind vLLM's router (``vllm-router``, the ``serve`` extra): the router command, and
N embedded engines plus the router on one machine. docs/REPLICAS.md gives the reasons for the
router flags; slot pinning keeps one server's state, so it is off behind a router.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.errors import EngineError
from grse_graph.llm.childproc import Started, start_child, stop_child, wait_until_answering
from grse_graph.llm.config import EngineSettings
from grse_graph.llm.engine import LocalEngine, free_port, require_started

ROUTER_EXECUTABLE = "vllm-router"


class RouterSettings(BaseModel):
    """The router flags that matter here (every other flag keeps vllm-router's default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str = "consistent_hash"
    health_check_interval_s: int = Field(default=1, ge=1)
    health_failure_threshold: int = Field(default=1, ge=1)
    retry_max_retries: int = Field(default=3, ge=0)
    request_timeout_s: int = Field(default=1800, ge=1)


def router_command(
    worker_urls: Sequence[str],
    *,
    host: str,
    port: int,
    settings: RouterSettings,
    executable: str = ROUTER_EXECUTABLE,
    metrics_port: int | None = None,
) -> list[str]:
    """The ``vllm-router`` command over ``worker_urls`` (server roots, without ``/v1``), its
    Prometheus metrics on ``host``:``metrics_port`` (unset, vllm-router 0.1.17 binds
    0.0.0.0:29000 and exits at start when that port is taken)."""
    metrics = [] if metrics_port is None else [
        "--prometheus-host", host, "--prometheus-port", str(metrics_port),
    ]  # fmt: skip
    return [
        executable,
        "--host", host,
        "--port", str(port),
        "--worker-urls", *worker_urls,
        "--policy", settings.policy,
        "--health-check-interval-secs", str(settings.health_check_interval_s),
        "--health-failure-threshold", str(settings.health_failure_threshold),
        "--retry-max-retries", str(settings.retry_max_retries),
        "--request-timeout-secs", str(settings.request_timeout_s),
        *metrics,
    ]  # fmt: skip


def find_router() -> str:
    """The router executable, or `EngineError` naming the extra."""
    found = shutil.which(ROUTER_EXECUTABLE)
    if found is None:
        raise EngineError(
            "vllm-router is not installed: pip install 'grse-graph[serve]' "
            "(replicas need a router in front of them)"
        )
    return found


class LocalReplicas(Started):
    """N embedded engines sharing the cores behind ``vllm-router``; `base_url` is the router's."""

    def __init__(
        self,
        settings: EngineSettings,
        replicas: int,
        *,
        router: RouterSettings | None = None,
        log_dir: Path | None = None,
    ) -> None:
        if replicas < 1:
            raise ValueError("replicas must be at least 1")
        threads = max(1, settings.resolved_threads() // replicas)
        self.settings = settings.model_copy(update={"threads": threads, "port": 0})
        self.replicas = replicas
        self.router = router or RouterSettings()
        self._log_dir = log_dir or settings.cache_dir / "logs"
        self.engines: list[LocalEngine] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port: int | None = None
        self._metrics_port: int | None = None

    @property
    def base_url(self) -> str:
        """The router's OpenAI-compatible base URL."""
        return f"http://{self.settings.host}:{require_started(self._port, 'the replicas')}/v1"

    @property
    def metrics_url(self) -> str:
        """The router's Prometheus metrics."""
        port = require_started(self._metrics_port, "the replicas")
        return f"http://{self.settings.host}:{port}/metrics"

    @property
    def worker_urls(self) -> list[str]:
        """Each replica's server root."""
        return [engine.base_url.removesuffix("/v1") for engine in self.engines]

    @property
    def notes(self) -> list[str]:
        """What a user should know about this setup."""
        return [
            f"{self.replicas} replica(s) of {self.settings.threads} thread(s) each, router "
            f"policy {self.router.policy}",
            "repeatable answers: off behind the router (slot pinning keeps one server's state)",
        ]

    def start(self) -> LocalReplicas:
        """Start the replicas, then the router; wait until the router answers."""
        executable = find_router()
        try:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            for index in range(self.replicas):
                log = self._log_dir / f"replica-{index}.log"
                self.engines.append(LocalEngine(self.settings, log_path=log).start())
            self._port = free_port(self.settings.host)
            self._metrics_port = free_port(self.settings.host)
            command = router_command(
                self.worker_urls,
                host=self.settings.host,
                port=self._port,
                settings=self.router,
                executable=executable,
                metrics_port=self._metrics_port,
            )
            log = self._log_dir / "router.log"
            self._log = log.open("wb")
            self._process = start_child(command, self._log, refuse_amx=False)
            wait_until_answering(
                f"{self.base_url}/models",
                self._process,
                self.settings.startup_timeout_s,
                lambda code: EngineError(
                    f"vllm-router {'did not answer' if code is None else 'exited'}; log {log}"
                ),
            )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the router, then every replica. Safe to call twice."""
        stop_child(self._process)
        if self._log is not None:
            self._log.close()
            self._log = None
        for engine in self.engines:
            engine.stop()
