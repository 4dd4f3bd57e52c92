"""`grse engine build | status | path`: the llama-server built from the pinned sources."""

from __future__ import annotations

from typing import Annotated

import typer

from grse_graph.errors import EngineError
from grse_graph.llm.build import LLAMA_CPP_PYTHON_VERSION, EngineBuilder
from grse_graph.llm.config import load_config
from grse_graph.llm.engine import choose_engine

from .options import ConfigOption


def _echo(line: str) -> None:
    typer.echo(line)


def _builder(config: ConfigOption) -> EngineBuilder:
    return EngineBuilder(load_config(config).engine.cache_dir, progress=_echo)


def build(
    force: Annotated[
        bool, typer.Option("--force", help="Rebuild even when already built.")
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Build llama-server from llama-cpp-python's vendored llama.cpp into the cache (once)."""
    result = _builder(config).build(force=force)
    if result.built:
        _echo(f"total build time: {result.seconds:.0f} s")
    else:
        _echo(f"already built: {result.binary}")


def status(config: ConfigOption = None) -> None:
    """Where the built llama-server is (or would be) and which engine `auto` picks now."""
    settings = load_config(config).engine
    builder = EngineBuilder(settings.cache_dir, progress=_echo)
    _echo(
        f"llama-server {LLAMA_CPP_PYTHON_VERSION} for this CPU: {builder.existing() or 'not built'}"
    )
    _echo(f"cache folder: {builder.binary_path.parent}")
    try:
        choice = choose_engine(settings)
        _echo(f"engine {settings.engine!r} resolves to: {choice.name} ({choice.executable})")
    except EngineError as error:
        _echo(f"engine {settings.engine!r} resolves to nothing: {error}")


def path(config: ConfigOption = None) -> None:
    """Print the built llama-server's path; exit 1 when it is not built."""
    found = _builder(config).existing()
    if found is None:
        raise EngineError("llama-server not built: run grse engine build")
    _echo(str(found))


def register(app: typer.Typer) -> None:
    """Register `grse engine build`, `grse engine status` and `grse engine path`."""
    group = typer.Typer(
        help="Build and inspect the local llama-server engine.", no_args_is_help=True
    )
    group.command("build")(build)
    group.command("status")(status)
    group.command("path")(path)
    app.add_typer(group, name="engine")
