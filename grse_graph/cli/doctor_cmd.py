"""`grse doctor`: what is installed, which engine would run, and which endpoints answer."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from dataclasses import asdict, dataclass
from typing import Annotated, Literal

import httpx
import typer
from rich.markup import escape
from rich.table import Table

from grse_graph.errors import GrseError
from grse_graph.llm.config import EngineSettings, LLMConfig, load_config
from grse_graph.llm.engine import choose_engine, find_llama_server, xllamacpp_available
from grse_graph.llm.models import (
    CHUNKED_MODELS,
    SMALL_DISTRIBUTION,
    SMALL_FILE,
    cached_model_path,
    file_sha256,
    is_assembled,
    locate_package_file,
    missing_chunks,
)
from grse_graph.llm.provider import ROLES
from grse_graph.llm.xllamacpp_server import build_description
from grse_graph.output import output_console

from .options import ConfigOption, JsonOption, print_json

Status = Literal["ok", "warn", "fail", "info"]
_STYLE: dict[Status, str] = {"ok": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}
_PACKAGES = (
    "grse-graph",
    "langgraph",
    "langchain-core",
    "langchain-openai",
    "pydantic",
    "typer",
    "rich",
    "httpx",
    "xllamacpp",
    "vllm",
)


@dataclass(frozen=True)
class Check:
    """One row of the doctor table."""

    area: str
    item: str
    status: Status
    detail: str


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_checks() -> list[Check]:
    """Python and key package versions."""
    rows = [Check("python", "version", "ok", f"{platform.python_version()} ({sys.executable})")]
    for name in _PACKAGES:
        version = _version(name)
        optional = name in {"vllm", "xllamacpp", "grse-graph"}
        if version is not None:
            rows.append(Check("package", name, "ok", version))
        else:
            rows.append(Check("package", name, "info" if optional else "fail", "not installed"))
    return rows


def engine_checks(settings: EngineSettings, needed: bool = True) -> list[Check]:
    """Available engines and the one `grse serve local` would start.

    When no role uses the embedded engine (`needed` False: a remote-only setup such as vLLM)
    a missing engine is information, not a failure.
    """
    server = find_llama_server(settings)
    rows = [
        Check(
            "engine",
            "xllamacpp",
            "ok" if xllamacpp_available() else "info",
            build_description() if xllamacpp_available() else "not installed (the local extra)",
        ),
        Check(
            "engine",
            "llama-server",
            "ok" if server else "info",
            server or "no binary configured or on PATH (optional)",
        ),
    ]
    try:
        choice = choose_engine(settings)
        rows.append(Check("engine", "preferred", "ok", f"{choice.name} (engine={settings.engine})"))
    except GrseError as error:
        if needed:
            rows.append(Check("engine", "preferred", "fail", str(error)))
        else:
            rows.append(
                Check("engine", "preferred", "info", f"not needed (every role is remote): {error}")
            )
    return rows


def model_checks(settings: EngineSettings, verify_hash: bool) -> list[Check]:
    """Bundled model packages and the assembled-model cache."""
    small = locate_package_file(SMALL_DISTRIBUTION, SMALL_FILE)
    fetched = settings.cache_dir / "models" / SMALL_FILE
    small = small or (fetched if fetched.is_file() else None)
    rows = [
        Check(
            "model",
            "small",
            "ok" if small else "warn",
            str(small) if small else "fetched from the package index on first use",
        )
    ]
    for name, model in CHUNKED_MODELS.items():
        missing = missing_chunks(model)
        present = len(model.chunks) - len(missing)
        target = cached_model_path(model, settings.cache_dir)
        if is_assembled(model, settings.cache_dir):
            status: Status = "ok"
            detail = f"assembled {target} ({model.size:,} bytes, sha256 recorded)"
            if verify_hash:
                actual = file_sha256(target)
                status = "ok" if actual == model.sha256 else "fail"
                detail += ", sha256 verified" if status == "ok" else f", sha256 MISMATCH {actual}"
        elif target.exists():
            status, detail = "warn", f"{target} has the wrong size or no hash; re-assembled on use"
        elif not missing:
            status, detail = "ok", f"packages {present}/{len(model.chunks)}; assembled on first use"
        else:
            status = "warn" if name == "default" else "info"
            detail = (
                f"packages {present}/{len(model.chunks)} installed; missing "
                f"{missing[0]}..{missing[-1]} (version {model.version})"
            )
        rows.append(Check("model", name, status, detail))
    rows.append(Check("model", "cache folder", "info", str(settings.cache_dir)))
    return rows


def endpoint_checks(config: LLMConfig) -> list[Check]:
    """Reachability of each configured role endpoint."""
    rows: list[Check] = []
    for role in ROLES:
        settings = config.role(role)
        if settings.base_url is None:
            rows.append(Check("endpoint", role, "ok", "embedded engine (started on demand)"))
            continue
        headers = {}
        if settings.api_key_env:
            key = os.environ.get(settings.api_key_env)
            if not key:
                rows.append(Check("endpoint", role, "fail", f"{settings.api_key_env} is not set"))
                continue
            headers["Authorization"] = f"Bearer {key}"
        url = settings.base_url.rstrip("/") + "/models"
        try:
            response = httpx.get(url, headers=headers, timeout=3.0)
        except httpx.HTTPError as error:
            rows.append(Check("endpoint", role, "fail", f"{url}: {type(error).__name__}"))
            continue
        status: Status = "ok" if response.status_code == 200 else "fail"
        rows.append(
            Check(
                "endpoint",
                role,
                status,
                f"{url}: HTTP {response.status_code}, model {settings.model}",
            )
        )
    return rows


def run_checks(config: LLMConfig, verify_hash: bool = False) -> list[Check]:
    """All doctor checks."""
    return [
        *package_checks(),
        *engine_checks(config.engine, needed=config.uses_embedded_engine()),
        *model_checks(config.engine, verify_hash),
        *endpoint_checks(config),
    ]


def doctor(
    config: ConfigOption = None,
    verify_hash: Annotated[
        bool, typer.Option("--verify-hash", help="Re-hash assembled models (slow).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check Python, packages, engines, model cache and endpoints; exit 1 on a failure."""
    checks = run_checks(load_config(config), verify_hash)
    failed = any(check.status == "fail" for check in checks)
    if as_json:
        print_json({"ok": not failed, "checks": [asdict(check) for check in checks]})
        if failed:
            raise typer.Exit(code=1)
        return
    table = Table(title="grse doctor")
    for column in ("area", "item", "status", "detail"):
        table.add_column(column, overflow="fold")
    for check in checks:
        table.add_row(
            check.area,
            check.item,
            f"[{_STYLE[check.status]}]{check.status}[/]",
            escape(check.detail),
        )
    output_console().print(table)
    if failed:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Register `grse doctor`."""
    app.command("doctor")(doctor)
