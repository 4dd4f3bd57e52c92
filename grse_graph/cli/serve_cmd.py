"""`grse serve local` (embedded llama.cpp engine) and `grse serve vllm` (GPU machines)."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import threading
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from grse_graph.errors import ConfigError, EngineError
from grse_graph.llm.config import EngineSettings, load_config
from grse_graph.llm.engine import LocalEngine
from grse_graph.llm.replicas import LocalReplicas, RouterSettings, router_command
from grse_graph.llm.vllm import VllmServe, plan_vllm

from .options import ConfigOption


def _echo(line: str) -> None:
    # Flushed at once: scripts (and the orphan test) read these lines from a pipe.
    typer.echo(line)


def serve_local(
    model: Annotated[
        str | None, typer.Option(help="small | default | medium | path to a .gguf file.")
    ] = None,
    engine: Annotated[str | None, typer.Option(help="auto | xllamacpp | llama-server.")] = None,
    port: Annotated[int | None, typer.Option(help="Port (0 = a free port).")] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: all cores).")] = None,
    n_ctx: Annotated[int | None, typer.Option("--n-ctx", help="Context tokens.")] = None,
    llama_server: Annotated[
        Path | None, typer.Option("--llama-server", help="Path to a llama-server binary.")
    ] = None,
    replicas: Annotated[
        int,
        typer.Option(
            min=1,
            help="Engines behind vllm-router (the serve extra), the cores shared among them; "
            "each question's requests go to one of them.",
        ),
    ] = 1,
    config: ConfigOption = None,
) -> None:
    """Run the embedded OpenAI-compatible engine on 127.0.0.1 until Ctrl-C or SIGTERM."""
    settings = load_config(
        config,
        overrides={
            "engine.model": model,
            "engine.engine": engine,
            "engine.port": port,
            "engine.threads": threads,
            "engine.n_ctx": n_ctx,
            "engine.llama_server_path": llama_server,
        },
    ).engine
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if replicas > 1:
            _serve_replicas(settings, replicas, stop)
        else:
            _serve_one(settings, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _echo("stopped")


def _serve_one(settings: EngineSettings, stop: threading.Event) -> None:
    with LocalEngine(settings) as running:
        _echo(f"base_url: {running.base_url}")
        _echo(f"engine: {running.engine_name} (pid {running.pid})")
        _echo(f"engine_pid: {running.pid}")
        _echo(f"model: {running.model_path} (served as {running.model_alias!r})")
        _echo(f"log: {running.log_path}")
        _echo("try:")
        body = (
            f'{{"model": "{running.model_alias}", '
            '"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 32}'
        )
        _echo(
            f"  curl -s {running.base_url}/chat/completions "
            f"-H 'Content-Type: application/json' -d '{body}'"
        )
        _echo("serving; press Ctrl-C to stop")
        while not stop.wait(0.5):
            if not running.running:
                raise EngineError(
                    f"{running.engine_name} stopped unexpectedly; log {running.log_path}: "
                    f"{running.log_tail()}"
                )


def _serve_replicas(settings: EngineSettings, replicas: int, stop: threading.Event) -> None:
    with LocalReplicas(settings, replicas) as running:
        _echo(f"base_url: {running.base_url}")
        for index, url in enumerate(running.worker_urls):
            _echo(f"replica {index}: {url}")
        _echo(f"router metrics: {running.metrics_url}")
        for note in running.notes:
            _echo(note)
        _echo(f'put base_url = "{running.base_url}" in [actor] (and [critic], [optimizer])')
        _echo("serving; press Ctrl-C to stop")
        while not stop.wait(0.5):
            if not any(engine.running for engine in running.engines):
                raise EngineError("every replica stopped")


def serve_vllm(
    model: Annotated[str, typer.Option(help="Hugging Face model id or local model folder.")],
    tensor_parallel: Annotated[int, typer.Option(min=1, help="GPUs per model replica.")] = 1,
    data_parallel: Annotated[int, typer.Option(min=1, help="Model replicas.")] = 1,
    max_model_len: Annotated[int | None, typer.Option(min=256, help="Context length.")] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port.")] = 8000,
    served_name: Annotated[
        str | None, typer.Option(help="Name clients pass as `model` (default: the model id).")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the command instead of running it.")] = False,
    replicas: Annotated[
        int,
        typer.Option(
            min=1,
            help="Print one vllm serve command per replica (ports PORT+1...) and the "
            "vllm-router command on PORT that fronts them.",
        ),
    ] = 1,
) -> None:
    """Build the `vllm serve` command (prefix caching, tool-call parser) and run it."""
    serve = VllmServe(
        model,
        tensor_parallel=tensor_parallel,
        data_parallel=data_parallel,
        max_model_len=max_model_len,
        host=host,
        port=port,
        served_name=served_name,
    )
    if replicas > 1:
        _print_replicas(serve, replicas)
        return
    plan = plan_vllm(serve)
    for warning in plan.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if dry_run:
        _echo(shlex.join(plan.command))
        return
    executable = shutil.which(plan.command[0])
    if executable is None:
        raise ConfigError(
            "vllm is not installed (it needs a GPU machine): pip install 'grse-graph[vllm]'"
        )
    _echo(f"$ {shlex.join(plan.command)}")
    os.execv(executable, plan.command)


def _print_replicas(serve: VllmServe, replicas: int) -> None:
    """The commands of `replicas` vLLM servers behind vllm-router (see docs/REPLICAS.md), each
    one replica (`data_parallel` 1) on its own port after `serve.port`."""
    host, port = serve.host, serve.port
    workers = []
    _echo(f"# {replicas} vLLM replicas (one per GPU group: set CUDA_VISIBLE_DEVICES for each)")
    for index in range(1, replicas + 1):
        plan = plan_vllm(replace(serve, data_parallel=1, port=port + index))
        for warning in plan.warnings[: 1 if index == 1 else 0]:
            typer.echo(f"warning: {warning}", err=True)
        _echo(shlex.join(plan.command) + " &")
        workers.append(f"http://{host}:{port + index}")
    _echo("# the router (pip install 'grse-graph[serve]'); roles use its base_url")
    router = router_command(workers, host=host, port=port, settings=RouterSettings())
    _echo(shlex.join(router))
    _echo(f"# base_url = http://{host}:{port}/v1")


def register(app: typer.Typer) -> None:
    """Register `grse serve local` and `grse serve vllm`."""
    serve = typer.Typer(help="Serve a model over an OpenAI-compatible API.", no_args_is_help=True)
    serve.command("local")(serve_local)
    serve.command("vllm")(serve_vllm)
    app.add_typer(serve, name="serve")
