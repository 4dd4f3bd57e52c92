"""``structured_method = "auto"`` resolves by engine: json_grammar on embedded llama-cpp-python,
json_schema on an embedded llama-server, function calling on a remote endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.llm.engine import llama_cpp_python_available
from grse_graph.llm.structured import structured_method


def _roles(overrides: dict[str, object]) -> ModelRoles:
    return ModelRoles(
        load_config(env={}, overrides=overrides), UsageLedger(), engine_url="http://127.0.0.1:9/v1"
    )


@pytest.mark.skipif(not llama_cpp_python_available(), reason="llama-cpp-python not installed")
def test_embedded_llama_cpp_python_gets_the_grammar_without_the_schema_in_the_prompt() -> None:
    roles = _roles({"engine.engine": "llama-cpp-python"})
    assert roles.structured_method("critic") == "json_grammar"
    assert structured_method(roles.chat("critic")) == "json_grammar"


def test_embedded_llama_server_gets_json_schema(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n", encoding="utf-8")
    binary.chmod(0o755)
    roles = _roles({"engine.engine": "llama-server", "engine.llama_server_path": str(binary)})
    assert roles.structured_method("optimizer") == "json_schema"


def test_a_remote_role_keeps_function_calling_and_a_setting_wins() -> None:
    roles = _roles(
        {
            "engine.engine": "llama-cpp-python",
            "critic.base_url": "http://gpu:8000/v1",
            "optimizer.structured_method": "json_prompt",
        }
    )
    assert roles.structured_method("critic") == "function_calling"
    assert roles.structured_method("optimizer") == "json_prompt"
