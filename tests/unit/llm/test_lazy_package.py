"""`grse_graph.llm` imports its parts on first use: the engine's child process and anything
that only reads a configuration start without langchain and openai (3.2 s of a 3.3 s start
before, measured with `python -X importtime -c "import grse_graph.llm.xllamacpp_server"`)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import grse_graph.llm as llm


def test_the_type_checkers_imports_match_the_lazy_homes() -> None:
    tree = ast.parse(Path(llm.__file__).read_text(encoding="utf-8"))
    (block,) = [node for node in tree.body if isinstance(node, ast.If)]
    imported = {
        alias.name: (node.module or "").removeprefix("grse_graph.llm.")
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == llm._MODULE_OF


def test_every_public_name_resolves_to_its_module_s_object() -> None:
    for name in llm.__all__:
        assert getattr(llm, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = llm.Nothing  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", ["grse_graph.llm.config", "grse_graph.llm.xllamacpp_server"])
def test_reading_a_config_or_starting_the_engine_imports_no_client_stack(module: str) -> None:
    heavy = "('langchain_core', 'openai')"
    code = f"import sys, {module}; print(sorted(m for m in {heavy} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
