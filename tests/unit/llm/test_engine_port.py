"""A port taken between `free_port` and the server's bind: the engine starts again on another
port (when the port was its own pick), or fails with the server's own line (when it was set)."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from grse_graph.errors import EngineError
from grse_graph.llm.config import EngineSettings
from grse_graph.llm.engine import PORT_ATTEMPTS, LocalEngine

# A stand-in `llama-server`: its first `refusals` starts log llama.cpp's bind failure and exit,
# as the server does when its port is taken; later starts serve /v1/models until stopped.
SERVER = """#!{python}
import http.server, pathlib, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
starts = pathlib.Path(__file__).with_suffix(".starts")
with starts.open("a") as log:
    log.write(f"{{port}}\\n")
if len(starts.read_text().split()) <= {refusals}:
    print(f"srv  start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: {{port}}")
    sys.exit(1)

class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{{"data": [{{"id": "grse-local"}}]}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

http.server.HTTPServer(("127.0.0.1", port), Models).serve_forever()
"""


def _settings(tmp_path: Path, refusals: int, port: int = 0) -> EngineSettings:
    server = tmp_path / "llama-server"
    server.write_text(SERVER.format(python=sys.executable, refusals=refusals), encoding="utf-8")
    server.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return EngineSettings(
        model=str(model),
        engine="llama-server",
        llama_server_path=server,
        port=port,
        cache_dir=tmp_path / "cache",
        startup_timeout_s=30,
    )


def _starts(tmp_path: Path) -> list[int]:
    return [int(port) for port in (tmp_path / "llama-server.starts").read_text().split()]


def test_a_server_whose_port_was_taken_starts_again_on_another(tmp_path: Path) -> None:
    with LocalEngine(_settings(tmp_path, refusals=1)) as engine:
        answer = httpx.get(f"{engine.base_url}/models", timeout=5)
        assert answer.json()["data"][0]["id"] == "grse-local"
    first, second = _starts(tmp_path)
    assert engine.base_url.endswith(f":{second}/v1") and first != second


def test_a_port_taken_on_every_attempt_is_one_error_with_the_server_s_line(
    tmp_path: Path,
) -> None:
    with pytest.raises(EngineError, match="couldn't bind HTTP server socket"):
        LocalEngine(_settings(tmp_path, refusals=PORT_ATTEMPTS)).start()
    assert len(_starts(tmp_path)) == PORT_ATTEMPTS


def test_a_port_the_user_set_is_not_changed(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="couldn't bind HTTP server socket"):
        LocalEngine(_settings(tmp_path, refusals=1, port=47913)).start()
    assert _starts(tmp_path) == [47913]
