"""Input checks shared by the scorers: metrics never guess, they refuse malformed input."""

from __future__ import annotations

from grse_graph.errors import ScoringError


def require_text(value: object, name: str) -> str:
    """Return `value` if it is a string; otherwise raise a one-line `ScoringError` naming it."""
    if not isinstance(value, str):
        raise ScoringError(f"{name} must be a string, got {type(value).__name__}")
    return value
