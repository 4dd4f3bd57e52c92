"""What the engine tests share: a long deterministic prefix, a small structured value, a tool,
and a liveness probe for engine processes."""

from __future__ import annotations

from pathlib import Path

from langchain_core.tools import tool
from pydantic import BaseModel


def long_prefix(topic: str, sentences: int = 60) -> str:
    """About 1,000 tokens of deterministic text."""
    return " ".join(
        f"Fact {i} about {topic}: the {topic} archive lists item {i * 7} "
        f"as stored in room {i % 13}."
        for i in range(sentences)
    )


class City(BaseModel):
    """A city and the country it is in."""

    name: str
    country: str


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"sunny in {city}"


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"
