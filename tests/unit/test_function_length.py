"""No function in grse_graph/ is longer than MAX_LINES; a long function is split into named
steps instead."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "grse_graph"

MAX_LINES = 120
"""Lines from a function's first decorator (or `def`) to its last line."""


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = (node.end_lineno or node.lineno) - start + 1
            if lines > MAX_LINES:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({lines})")
    return found


def test_no_function_is_longer_than_the_limit() -> None:
    checked = sorted(PACKAGE.rglob("*.py"))
    assert checked, "no source files found"
    too_long = [line for path in checked for line in _long_functions(path)]
    assert too_long == [], f"functions longer than {MAX_LINES} lines: {too_long}"
