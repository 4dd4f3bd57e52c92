"""How many tokens a schema's largest valid object can need: the cap a structured reply needs. A
reply past it is a runaway, so a cap sized to the schema stops it early without cutting a valid
answer. Only a bounded schema has one (every string with a ``maxLength`` or ``enum``, every array
with a ``maxItems``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

CHARS_PER_TOKEN = 2.5
"""A low estimate of JSON characters per token (punctuation and short keys tokenise densely),
so the budget errs on the generous side."""

BUDGET_MARGIN = 1.5
"""Multiplier on the estimate (whitespace the model adds, multi-token characters)."""

BUDGET_OVERHEAD_TOKENS = 32
"""Tokens added for an opening code fence, a stop token and similar framing."""

_SCALAR_CHARS = {"integer": 20, "number": 24, "boolean": 5, "null": 4}


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    reference = node.get("$ref")
    if not isinstance(reference, str) or not reference.startswith("#/"):
        return node
    target: Any = root
    for part in reference[2:].split("/"):
        target = target[part]
    return _resolve(target, root)


def _max_chars(node: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> float | None:
    """Characters of the largest JSON value ``node`` admits; None when unbounded."""
    if depth > 32:
        return None  # recursive schema
    node = _resolve(node, root)
    if "const" in node:
        return len(json.dumps(node["const"]))
    if "enum" in node:
        return max((len(json.dumps(value)) for value in node["enum"]), default=2)
    for combiner in ("anyOf", "oneOf", "allOf"):
        if combiner in node:
            sizes = [_max_chars(variant, root, depth + 1) for variant in node[combiner]]
            if any(size is None for size in sizes):
                return None
            known = [size for size in sizes if size is not None]
            return (sum(known) if combiner == "allOf" else max(known, default=0.0)) or None
    kind = node.get("type")
    if isinstance(kind, list):
        sizes = [_max_chars({**node, "type": one}, root, depth + 1) for one in kind]
        return None if any(size is None for size in sizes) else max(s or 0.0 for s in sizes)
    if kind == "string":
        limit = node.get("maxLength")
        # Escapes can double a character; quotes add two.
        return 2 * limit + 2 if isinstance(limit, int) else None
    if kind in _SCALAR_CHARS:
        return _SCALAR_CHARS[kind]
    if kind == "array":
        limit = node.get("maxItems")
        if not isinstance(limit, int):
            return None
        if limit == 0:
            return 2
        item = _max_chars(node.get("items", {}), root, depth + 1)
        return None if item is None else 2 + limit * (item + 2)
    if kind == "object" or "properties" in node:
        if node.get("additionalProperties") not in (None, False):
            return None
        total = 2.0
        for name, sub in node.get("properties", {}).items():
            value = _max_chars(sub, root, depth + 1)
            if value is None:
                return None
            total += len(json.dumps(name)) + 2 + value + 2
        return total
    return None  # no type: any value


def schema_token_budget(schema: type[BaseModel] | Mapping[str, Any]) -> int | None:
    """Tokens the largest object of ``schema`` needs, margins included; None when unbounded."""
    document = schema.model_json_schema() if isinstance(schema, type) else schema
    chars = _max_chars(document, document)
    if chars is None:
        return None
    return math.ceil(chars / CHARS_PER_TOKEN * BUDGET_MARGIN) + BUDGET_OVERHEAD_TOKENS
