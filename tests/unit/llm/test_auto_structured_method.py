"""``structured_method = "auto"`` resolves by engine: json_schema on the embedded engine
(xllamacpp or a llama-server binary), function calling on a remote endpoint."""

from __future__ import annotations

from pathlib import Path

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.llm.structured import structured_method


def _roles(overrides: dict[str, object]) -> ModelRoles:
    return ModelRoles(
        load_config(env={}, overrides=overrides), UsageLedger(), engine_url="http://127.0.0.1:9/v1"
    )


def test_embedded_xllamacpp_gets_json_schema() -> None:
    roles = _roles({"engine.engine": "xllamacpp"})
    assert roles.structured_method("critic") == "json_schema"
    assert structured_method(roles.chat("critic")) == "json_schema"


def test_embedded_llama_server_gets_json_schema(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n", encoding="utf-8")
    binary.chmod(0o755)
    roles = _roles({"engine.engine": "llama-server", "engine.llama_server_path": str(binary)})
    assert roles.structured_method("optimizer") == "json_schema"


def test_a_remote_role_keeps_function_calling_and_a_setting_wins() -> None:
    roles = _roles(
        {
            "critic.base_url": "http://gpu:8000/v1",
            "optimizer.structured_method": "json_prompt",
        }
    )
    assert roles.structured_method("critic") == "function_calling"
    assert roles.structured_method("optimizer") == "json_prompt"
