"""The embedded engine's process: llama.cpp's server from the prebuilt ``xllamacpp`` wheel, run as
``python -m grse_graph.llm.xllamacpp_server LAUNCH_JSON`` with the flags a user's own
``llama-server`` gets (`llama_server_command`; docs/ENGINE.md gives the reason for each).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

LOG_VERBOSITY = 4
"""llama.cpp's trace level: one line per task with the tokens kept from the slot's cache."""


class ServerLaunch(BaseModel):
    """Everything the server process needs (written on its command line as JSON)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_path: Path
    alias: str
    host: str
    port: int
    n_parallel: int
    n_ctx: int
    threads: int
    flash_attention: bool


def llama_server_command(executable: str, launch: ServerLaunch) -> list[str]:
    """The command line of a user's own ``llama-server`` binary with the same settings."""
    threads = str(launch.threads)
    return [
        executable,
        "--model", str(launch.model_path),
        "--host", launch.host,
        "--port", str(launch.port),
        "--alias", launch.alias,
        "--parallel", str(launch.n_parallel),
        # A KV stream per slot (no --kv-unified), n_ctx each: in one shared buffer a request's
        # attention spans the other slots' cells and greedy answers changed with what they held.
        "--ctx-size", str(launch.n_ctx * launch.n_parallel),
        "--threads", threads,
        "--threads-batch", threads,
        "--flash-attn", "on" if launch.flash_attention else "off",
        "--jinja",
        "--cache-prompt",
        "--cache-ram", "0",
        "--metrics",
        "--no-webui",
        "--log-verbosity", str(LOG_VERBOSITY),
    ]  # fmt: skip


def common_params(launch: ServerLaunch) -> Any:
    """xllamacpp's ``CommonParams`` for `launch` (the same settings as `llama_server_command`)."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(launch.model_path)
    params.model_alias = {launch.alias}
    params.hostnames = [launch.host]
    params.port = launch.port
    params.n_parallel = launch.n_parallel
    params.kv_unified = False  # see llama_server_command
    params.n_ctx = launch.n_ctx * launch.n_parallel
    params.cpuparams.n_threads = launch.threads
    params.cpuparams_batch.n_threads = launch.threads
    params.flash_attn_type = (
        xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED
        if launch.flash_attention
        else xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
    )
    params.use_jinja = True
    params.cache_prompt = True
    params.cache_ram_mib = 0
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.ui = False
    params.verbosity = LOG_VERBOSITY
    return params


def build_description() -> str:
    """The installed xllamacpp: version, build and the CPU features its kernels use."""
    import importlib.metadata

    import xllamacpp

    info = xllamacpp.BUILD_INFO
    # get_system_info: "CPU : SSE3 = 1 | AVX2 = 1 | ..." (one such group per backend).
    features = [
        part.split("=")[0].split(":")[-1].strip()
        for part in xllamacpp.get_system_info().split("|")
        if part.strip().endswith("= 1")
    ]
    return (
        f"{importlib.metadata.version('xllamacpp')} ({info.get('compiler')}, "
        f"{info.get('build_target')}); CPU features: {' '.join(features)}"
    )


def main(argv: list[str]) -> int:
    """Serve the launch given as JSON until SIGTERM or SIGINT."""
    if len(argv) != 1:
        print("usage: python -m grse_graph.llm.xllamacpp_server LAUNCH_JSON", file=sys.stderr)
        return 2
    import xllamacpp

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = xllamacpp.Server(common_params(ServerLaunch.model_validate_json(argv[0])))
    print(f"grse: xllamacpp serving at {server.listening_address}", file=sys.stderr, flush=True)
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
