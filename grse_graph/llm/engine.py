"""The embedded local engine: llama.cpp's own OpenAI-compatible server on loopback (docs/ENGINE.md).
On Linux the child dies with the thread that started it (`childproc`): start the engine from a
thread that lives as long as the engine should, the main one normally.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, TypeVar

from grse_graph.errors import EngineError
from grse_graph.llm.accounting import PromptEvalStats
from grse_graph.llm.childproc import Started, start_child, stop_child, wait_until_answering
from grse_graph.llm.config import ENGINE_MODEL_ALIAS, EngineSettings
from grse_graph.llm.models import resolve_model
from grse_graph.llm.xllamacpp_server import ServerLaunch, llama_server_command

ConcreteEngine = Literal["xllamacpp", "llama-server"]
V = TypeVar("V")

_PROMPT_EVAL = re.compile(
    r"(?:\| task (\d+) \|\s*)?prompt eval time\s*=\s*([\d.]+)\s*ms\s*/\s*(\d+)\s*tokens"
)
# An n>1 request's extra samples run as child tasks that print the parent's prompt timing again.
_CHILD_TASK = re.compile(r"\| task (\d+) \| processing task, is_child = 1")
_GENERATION = re.compile(
    r"(?<!prompt )\beval time\s*=\s*([\d.]+)\s*ms\s*/\s*(\d+)\s*(?:runs|tokens)"
)
# Trace verbosity: the slot's tokens kept from its cache before a task's prompt.
_SLOT_CACHED = re.compile(r"cached n_tokens = (\d+), memory_seq_rm \[")
# What llama.cpp's server (and the OS) logs when its HTTP port is taken.
_PORT_TAKEN = re.compile(r"couldn't bind|address already in use", re.IGNORECASE)
PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class EngineChoice:
    """Which engine runs and how to start it."""

    name: ConcreteEngine
    executable: str


def xllamacpp_available() -> bool:
    """True when the ``xllamacpp`` wheel is installed (checked without importing it: that
    loads the native library)."""
    try:
        return importlib.util.find_spec("xllamacpp") is not None
    except (ImportError, ValueError):
        return False


def find_llama_server(
    settings: EngineSettings, which: Callable[[str], str | None] = shutil.which
) -> str | None:
    """The configured ``llama_server_path`` (if executable), else ``llama-server`` on PATH."""
    if settings.llama_server_path is not None:
        path = settings.llama_server_path.expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return which("llama-server")


def choose_engine(
    settings: EngineSettings,
    *,
    which: Callable[[str], str | None] = shutil.which,
    xllamacpp_found: Callable[[], bool] = xllamacpp_available,
) -> EngineChoice:
    """Pick the engine: ``llama-server`` when asked for or when ``llama_server_path`` is set
    (its binary must exist), else xllamacpp; ``auto`` without xllamacpp takes a
    ``llama-server`` on PATH."""
    if settings.engine == "llama-server" or settings.llama_server_path is not None:
        server = find_llama_server(settings, which)
        if server is not None:
            return EngineChoice("llama-server", server)
        where = settings.llama_server_path or "PATH"
        raise EngineError(f"engine llama-server: no executable llama-server found ({where})")
    if xllamacpp_found():
        return EngineChoice("xllamacpp", sys.executable)
    server = which("llama-server") if settings.engine == "auto" else None
    if server is not None:
        return EngineChoice("llama-server", server)
    raise EngineError(
        "no local engine: install xllamacpp (pip install 'grse-graph[local]') or set "
        "[engine] llama_server_path to a llama-server binary"
    )


def server_launch(model_path: Path, settings: EngineSettings, port: int) -> ServerLaunch:
    """What the server is started with."""
    return ServerLaunch(
        model_path=model_path,
        alias=ENGINE_MODEL_ALIAS,
        host=settings.host,
        port=port,
        n_parallel=settings.n_parallel,
        n_ctx=settings.n_ctx,
        threads=settings.resolved_threads(),
        flash_attention=settings.flash_attention,
    )


def build_engine_command(choice: EngineChoice, launch: ServerLaunch) -> list[str]:
    """The command line that starts the chosen engine."""
    if choice.name == "llama-server":
        return llama_server_command(choice.executable, launch)
    return [choice.executable, "-m", "grse_graph.llm.xllamacpp_server", launch.model_dump_json()]


def free_port(host: str) -> int:
    """A port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def parse_prompt_eval_stats(log_text: str) -> PromptEvalStats:
    """Sum the server's per-completion timing lines and the tokens its slots kept from their
    caches. Every sample of an ``n`` > 1 request is a completion; its prompt counts once."""
    children = {match.group(1) for match in _CHILD_TASK.finditer(log_text)}
    prompts = list(_PROMPT_EVAL.finditer(log_text))
    parents = [match for match in prompts if match.group(1) not in children]
    generations = list(_GENERATION.finditer(log_text))
    return PromptEvalStats(
        completions=len(prompts),
        evaluated_prompt_tokens=sum(int(match.group(3)) for match in parents),
        reused_prompt_tokens=sum(int(match.group(1)) for match in _SLOT_CACHED.finditer(log_text)),
        prompt_eval_ms=sum(float(match.group(2)) for match in parents),
        generated_tokens=sum(int(match.group(2)) for match in generations),
        generation_ms=sum(float(match.group(1)) for match in generations),
    )


def require_started(value: V | None, what: str = "the local engine") -> V:
    """What `start` set (EngineError while ``what`` is not started)."""
    if value is None:
        raise EngineError(f"{what} is not started")
    return value


class LocalEngine(Started):
    """Start and stop the embedded engine (a context manager); it serves as ``model_alias``."""

    def __init__(self, settings: EngineSettings, *, log_path: Path | None = None) -> None:
        self.settings = settings
        self.model_alias = ENGINE_MODEL_ALIAS
        self._requested_log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._log_handle: IO[bytes] | None = None
        self._choice: EngineChoice | None = None
        self._model_path: Path | None = None
        self._port: int | None = None
        self._log_path: Path | None = None

    @property
    def running(self) -> bool:
        """True while the engine process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL of the running engine."""
        return f"http://{self.settings.host}:{require_started(self._port)}/v1"

    @property
    def engine_name(self) -> ConcreteEngine:
        """``xllamacpp`` or ``llama-server``."""
        return require_started(self._choice).name

    @property
    def model_path(self) -> Path:
        """The GGUF file being served."""
        return require_started(self._model_path)

    @property
    def slots(self) -> int:
        """The server's slots (``n_parallel``), which `slot_pinning` names."""
        return self.settings.n_parallel

    @property
    def pid(self) -> int:
        """Process id of the engine."""
        return require_started(self._process).pid

    @property
    def log_path(self) -> Path:
        """The file the engine's stdout and stderr go to."""
        return require_started(self._log_path)

    def start(self) -> LocalEngine:
        """Start the engine and wait until it answers (else `EngineError`, the engine stopped).
        A port picked here (``port`` 0) can be taken between the pick and the server's bind: a
        server that exits for that is started again on another port (`PORT_ATTEMPTS` in all)."""
        attempts_left = PORT_ATTEMPTS
        while True:
            self._launch()
            try:
                self._poll_ready()
                return self
            except BaseException as error:
                self.stop()
                self._process, attempts_left = None, attempts_left - 1
                retry = isinstance(error, EngineError) and not self.settings.port and attempts_left
                if not (retry and _PORT_TAKEN.search(self.log_tail(lines=20))):
                    raise

    def _launch(self) -> None:
        if self._process is not None:
            raise EngineError("the local engine is already started")
        choice = choose_engine(self.settings)
        model_path = resolve_model(self.settings.model, self.settings.cache_dir)
        port = self.settings.port or free_port(self.settings.host)
        log_path = self._requested_log_path or (
            self.settings.cache_dir / "logs" / f"engine-{os.getpid()}-{port}.log"
        )
        log_path.parent.mkdir(parents=True, exist_ok=True)
        launch = server_launch(model_path, self.settings, port)
        command = build_engine_command(choice, launch)
        self._choice, self._model_path, self._port = choice, model_path, port
        self._log_path = log_path
        self._log_handle = log_path.open("wb")
        self._log_handle.write(("$ " + " ".join(command) + "\n").encode())
        self._log_handle.flush()
        try:
            self._process = start_child(
                command, self._log_handle, refuse_amx=not self.settings.allow_amx
            )
        except OSError as error:
            self._close_log()
            raise EngineError(f"{choice.name}: cannot start {command[0]}: {error}") from error

    def _poll_ready(self) -> None:
        url = f"{self.base_url}/models"

        def failure(code: int | None) -> EngineError:
            what = (
                f"exited with code {code} while starting"
                if code is not None
                else f"did not answer {url} within {self.settings.startup_timeout_s:.0f}s"
            )
            return EngineError(f"{self.engine_name} {what}; log {self.log_path}: {self.log_tail()}")

        timeout_s = self.settings.startup_timeout_s
        wait_until_answering(url, require_started(self._process), timeout_s, failure)

    def log_tail(self, lines: int = 8) -> str:
        """The last log lines joined with `` | `` (for one-line error messages)."""
        if self._log_path is None or not self._log_path.exists():
            return "(no log)"
        text = self._log_path.read_text(encoding="utf-8", errors="replace")
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(empty log)"

    def prompt_eval_stats(self) -> PromptEvalStats:
        """Prompt tokens evaluated vs reused so far, from the engine log (a difference of two
        snapshots is what ran between them). The server writes its log from another thread, ms
        after the reply: the log is read until it stops growing (at most ~1 s)."""
        if self._log_path is None or not self._log_path.exists():
            return PromptEvalStats()
        return parse_prompt_eval_stats(self._settled_log_text())

    def _settled_log_text(self, pause_s: float = 0.05, max_reads: int = 20) -> str:
        assert self._log_path is not None
        text = self._log_path.read_text(encoding="utf-8", errors="replace")
        for _ in range(max_reads):
            time.sleep(pause_s)
            again = self._log_path.read_text(encoding="utf-8", errors="replace")
            if again == text:
                break
            text = again
        return text

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, wait, then SIGKILL. Safe to call twice."""
        stop_child(self._process, timeout_s)
        self._close_log()

    def _close_log(self) -> None:
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
