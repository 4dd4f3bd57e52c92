"""The embedded local engine: an OpenAI-compatible llama.cpp server on loopback.

`LocalEngine` resolves the model file, chooses the engine (see `choose_engine`: llama.cpp's
``llama-server`` when asked for or configured, found at the configured path, in the cache where
`grse engine build` puts it, or on PATH; otherwise llama-cpp-python's
``python -m llama_cpp.server``), starts it on a free port with a chat format that supports tool
calls, waits until ``/v1/models`` answers and stops it on exit.

Orphans: on Linux the child is started with ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` so it dies with
its parent even when the parent is killed with SIGKILL. Caveat: the kernel sends that signal
when the *thread* that forked the child exits, not the whole process, so start the engine from
a thread that lives as long as the engine should (the main thread, normally). Unless
``allow_amx`` is set, the child also refuses ggml the AMX permission (see `childproc`).

Prefix reuse: llama-cpp-python keeps the previous prompt in its KV cache and evaluates only the
part after the longest common prefix, but its usage block never reports cached tokens. With its
verbose log (always on here) it prints ``N prefix-match hit, remaining M prompt tokens to eval``
and per completion ``prompt eval time = X ms / M tokens``. llama-server prints the same
``prompt eval time`` lines per slot and, at trace verbosity (on here), ``cached n_tokens = N,
memory_seq_rm [N, end)`` per task: the tokens it kept from the slot's cache. `prompt_eval_stats`
parses both engines' lines from the log. llama-server also reports
``prompt_tokens_details.cached_tokens`` in its usage block, which the ledger records.

llama-cpp-python's own RAM prompt cache (``--cache true --cache_type ram``) is not used: in one
GRSE iteration on the 0.5B model its server grew to 23 GB resident after 24 saved prompt states
of 67-79 MB each (a 1 GB cache) and was killed for lack of memory.
"""

from __future__ import annotations

import contextlib
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

import httpx

from grse_graph.errors import EngineError
from grse_graph.llm.accounting import PromptEvalStats
from grse_graph.llm.build import build_if_missing, cached_llama_server
from grse_graph.llm.childproc import child_preparation
from grse_graph.llm.config import ENGINE_MODEL_ALIAS, EngineSettings
from grse_graph.llm.lifecycle import Started
from grse_graph.llm.models import resolve_model

ConcreteEngine = Literal["llama-server", "llama-cpp-python"]
V = TypeVar("V")

_LOG_TAIL_LINES = 8
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")

_PROMPT_EVAL = re.compile(
    r"(?:\| task (\d+) \|\s*)?prompt eval time\s*=\s*([\d.]+)\s*ms\s*/\s*(\d+)\s*tokens"
)
# llama-server: the extra samples of an n>1 request run as child tasks that copy the parent's
# prompt state but print the parent's prompt timing again.
_CHILD_TASK = re.compile(r"\| task (\d+) \| processing task, is_child = 1")
_GENERATION = re.compile(
    r"(?<!prompt )\beval time\s*=\s*([\d.]+)\s*ms\s*/\s*(\d+)\s*(?:runs|tokens)"
)
_PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens")
# llama-server (trace verbosity): the slot's tokens kept from its cache before a task's prompt.
_SLOT_CACHED = re.compile(r"cached n_tokens = (\d+), memory_seq_rm \[")


_HONOURS_N: dict[ConcreteEngine, bool] = {"llama-server": True, "llama-cpp-python": False}


def honours_n(engine: ConcreteEngine) -> bool:
    """True when the engine returns ``n`` choices for one request with ``n`` > 1
    (llama-server; llama-cpp-python's server ignores ``n`` and returns one choice)."""
    return _HONOURS_N[engine]


@dataclass(frozen=True)
class EngineChoice:
    """Which engine runs and how to start it."""

    name: ConcreteEngine
    executable: str


def llama_cpp_python_available() -> bool:
    """True when llama-cpp-python and its server dependencies are installed (checked without
    importing them: importing llama_cpp loads the native library)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in _SERVER_MODULES)
    except (ImportError, ValueError):
        return False


def find_llama_server(
    settings: EngineSettings,
    which: Callable[[str], str | None] = shutil.which,
    built: Callable[[Path], Path | None] = cached_llama_server,
) -> str | None:
    """The configured ``llama_server_path`` (if executable), else the one `grse engine build`
    put in the cache for this CPU, else ``llama-server`` on PATH."""
    if settings.llama_server_path is not None:
        path = settings.llama_server_path.expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    cached = built(settings.cache_dir)
    return str(cached) if cached is not None else which("llama-server")


def choose_engine(
    settings: EngineSettings,
    *,
    which: Callable[[str], str | None] = shutil.which,
    python_available: Callable[[], bool] = llama_cpp_python_available,
    built: Callable[[Path], Path | None] = cached_llama_server,
) -> EngineChoice:
    """Pick the engine: the requested one; for ``auto`` a configured ``llama_server_path``,
    else llama-cpp-python, else a llama-server from the cache or PATH.

    ``auto`` prefers llama-cpp-python over a built or PATH llama-server until the benchmarks
    (`benchmarks/engine.py --compare`, `benchmarks/iteration.py --compare`) decide otherwise.
    """
    server = find_llama_server(settings, which, built)
    if settings.engine == "llama-server" or (
        settings.engine == "auto" and settings.llama_server_path is not None
    ):
        if server is not None:
            return EngineChoice("llama-server", server)
        where = settings.llama_server_path or "cache or PATH"
        raise EngineError(
            f"engine llama-server: no executable llama-server found ({where}); "
            "run grse engine build"
        )
    if python_available():
        return EngineChoice("llama-cpp-python", sys.executable)
    if settings.engine == "auto" and server is not None:
        return EngineChoice("llama-server", server)
    raise EngineError(
        "no local engine: install llama-cpp-python (pip install 'grse-graph[local]') "
        "or build llama-server (grse engine build)"
    )


def ensure_engine(
    settings: EngineSettings,
    progress: Callable[[str], None],
    *,
    which: Callable[[str], str | None] = shutil.which,
    built: Callable[[Path], Path | None] = cached_llama_server,
    build: Callable[[Path, Callable[[str], None]], Path] = build_if_missing,
) -> EngineChoice:
    """`choose_engine`, but with ``engine = "llama-server"`` and ``build_if_missing`` a missing
    binary is built into the cache first (reported through ``progress``)."""
    wants_build = settings.engine == "llama-server" and settings.build_if_missing
    if wants_build and find_llama_server(settings, which, built) is None:
        if settings.llama_server_path is not None:
            raise EngineError(
                f"engine llama-server: {settings.llama_server_path} is not an executable file"
            )
        return EngineChoice("llama-server", str(build(settings.cache_dir, progress)))
    return choose_engine(settings, which=which, built=built)


def build_engine_command(
    choice: EngineChoice,
    model_path: Path,
    settings: EngineSettings,
    port: int,
    alias: str = ENGINE_MODEL_ALIAS,
) -> list[str]:
    """The command line that starts the chosen engine."""
    threads = str(settings.resolved_threads())
    if choice.name == "llama-server":
        return [
            choice.executable,
            "--model", str(model_path),
            "--host", settings.host,
            "--port", str(port),
            "--alias", alias,
            "--parallel", str(settings.n_parallel),
            # One KV buffer shared by the slots (an n>1 request's samples share the prompt; 5x
            # faster in issue 10), n_ctx per slot, n_parallel * n_ctx in all.
            "--kv-unified",
            "--kv-unified-per-slot", str(settings.n_ctx),
            "--ctx-size", str(settings.n_ctx * settings.n_parallel),
            "--threads", threads,
            "--threads-batch", threads,
            "--flash-attn", "on" if settings.flash_attention else "off",
            "--jinja",
            # Reuse the longest common prefix of a slot's last prompt (the default, made explicit);
            # --cache-reuse (KV shifting of chunks after a change) stays off: it shifts positions.
            "--cache-prompt",
            "--metrics",
            "--no-webui",
            # Trace level adds one line per task with the tokens reused from the slot's cache
            # ("cached n_tokens = N"), which `parse_prompt_eval_stats` reads.
            "--log-verbosity", "4",
        ]  # fmt: skip
    return [
        choice.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--host", settings.host,
        "--port", str(port),
        "--model_alias", alias,
        "--n_ctx", str(settings.n_ctx),
        "--n_threads", threads,
        "--n_threads_batch", threads,
        "--chat_format", settings.chat_format,
        "--flash_attn", _flag(settings.flash_attention),
        "--logits_all", _flag(settings.prompt_logits),
        # Verbose logging prints per-request prompt-eval and prefix-match counts (prefix reuse).
        "--verbose", "true",
    ]  # fmt: skip


def _flag(value: bool) -> str:
    return "true" if value else "false"


def free_port(host: str) -> int:
    """A port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def parse_prompt_eval_stats(log_text: str) -> PromptEvalStats:
    """Sum the engine's per-completion timing lines and prefix-cache hits (llama-cpp-python's
    and llama-server's formats). Every sample of an ``n`` > 1 request counts as a completion;
    its prompt counts once."""
    completions = evaluated = reused = generated = 0
    prompt_ms = generation_ms = 0.0
    children = {match.group(1) for match in _CHILD_TASK.finditer(log_text)}
    for match in _PROMPT_EVAL.finditer(log_text):
        completions += 1
        if match.group(1) is None or match.group(1) not in children:
            prompt_ms += float(match.group(2))
            evaluated += int(match.group(3))
    for match in _GENERATION.finditer(log_text):
        generation_ms += float(match.group(1))
        generated += int(match.group(2))
    for pattern in (_PREFIX_HIT, _SLOT_CACHED):
        for match in pattern.finditer(log_text):
            reused += int(match.group(1))
    return PromptEvalStats(
        completions=completions,
        evaluated_prompt_tokens=evaluated,
        reused_prompt_tokens=reused,
        prompt_eval_ms=prompt_ms,
        generated_tokens=generated,
        generation_ms=generation_ms,
    )


def _progress_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _started(value: V | None) -> V:
    """What `start` set (EngineError while the engine is not started)."""
    if value is None:
        raise EngineError("the local engine is not started")
    return value


class LocalEngine(Started):
    """Start and stop the embedded engine; a context manager (or `start` / `stop`).

    After `start`: `base_url` (``http://127.0.0.1:PORT/v1``), `engine_name`, `model_path`,
    `model_alias` (pass it as ``model``), `pid` and `log_path`.
    """

    def __init__(
        self,
        settings: EngineSettings,
        *,
        log_path: Path | None = None,
        which: Callable[[str], str | None] = shutil.which,
        progress: Callable[[str], None] = _progress_to_stderr,
    ) -> None:
        self.settings = settings
        self.model_alias = ENGINE_MODEL_ALIAS
        self._which = which
        self._progress = progress
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
        return f"http://{self.settings.host}:{_started(self._port)}/v1"

    @property
    def port(self) -> int:
        """The port the engine listens on."""
        return _started(self._port)

    @property
    def engine_name(self) -> ConcreteEngine:
        """``llama-server`` or ``llama-cpp-python``."""
        return _started(self._choice).name

    @property
    def model_path(self) -> Path:
        """The GGUF file being served."""
        return _started(self._model_path)

    @property
    def pid(self) -> int:
        """Process id of the engine."""
        return _started(self._process).pid

    @property
    def log_path(self) -> Path:
        """The file the engine's stdout and stderr go to."""
        return _started(self._log_path)

    def start(self) -> LocalEngine:
        """Resolve the model, start the engine and wait until it answers."""
        self.launch()
        self.wait_ready()
        return self

    def launch(self) -> None:
        """Resolve the model and start the engine process without waiting for it (`EngineSlots`
        launches every slot, then waits for each)."""
        if self._process is not None:
            raise EngineError("the local engine is already started")
        choice = ensure_engine(self.settings, self._progress, which=self._which)
        model_path = resolve_model(self.settings.model, self.settings.cache_dir)
        port = self.settings.port or free_port(self.settings.host)
        log_path = self._requested_log_path or (
            self.settings.cache_dir / "logs" / f"engine-{os.getpid()}-{port}.log"
        )
        log_path.parent.mkdir(parents=True, exist_ok=True)
        command = build_engine_command(choice, model_path, self.settings, port, self.model_alias)
        self._choice, self._model_path, self._port, self._log_path = (
            choice,
            model_path,
            port,
            log_path,
        )
        self._log_handle = log_path.open("wb")
        self._log_handle.write(("$ " + " ".join(command) + "\n").encode())
        self._log_handle.flush()
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self._log_handle,
                stderr=subprocess.STDOUT,
                # Own session: a terminal's Ctrl-C reaches only us, and we stop the engine.
                start_new_session=True,
                preexec_fn=child_preparation(os.getpid(), refuse_amx=not self.settings.allow_amx),
            )
        except OSError as error:
            self._close_log()
            raise EngineError(f"{choice.name}: cannot start {command[0]}: {error}") from error

    def wait_ready(self) -> None:
        """Wait until the launched engine answers; stop it and raise `EngineError` if it exits
        or does not answer within ``startup_timeout_s``."""
        try:
            self._poll_ready()
        except BaseException:
            self.stop()
            raise

    def _poll_ready(self) -> None:
        deadline = time.monotonic() + self.settings.startup_timeout_s
        url = f"{self.base_url}/models"
        with httpx.Client(timeout=2.0) as client:
            while True:
                process = self._process
                if process is None:
                    raise EngineError("the local engine was stopped while starting")
                code = process.poll()
                if code is not None:
                    raise EngineError(
                        f"{self.engine_name} exited with code {code} while starting; "
                        f"log {self.log_path}: {self.log_tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(url).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise EngineError(
                        f"{self.engine_name} did not answer {url} within "
                        f"{self.settings.startup_timeout_s:.0f}s; log {self.log_path}: "
                        f"{self.log_tail()}"
                    )
                time.sleep(0.25)

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last log lines joined with `` | `` (for one-line error messages)."""
        if self._log_path is None or not self._log_path.exists():
            return "(no log)"
        text = self._log_path.read_text(encoding="utf-8", errors="replace")
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(empty log)"

    def prompt_eval_stats(self) -> PromptEvalStats:
        """Prompt tokens evaluated vs reused so far, parsed from the engine log.

        Take the difference of two snapshots around a request to see its prefix reuse.
        llama-server writes its log from a separate thread, so its timing lines can land a few
        milliseconds after the reply: the log is read until it stops growing (at most ~1 s).
        """
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
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout_s)
        self._close_log()

    def _close_log(self) -> None:
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
