"""Role prompts of the built-in teams, shipped as markdown files inside the package."""

from __future__ import annotations

from importlib import resources
from typing import Literal

PromptName = Literal[
    "passages_reasoner",
    "passages_answerer",
    "conversation_retriever",
    "conversation_reasoner",
]


def load_prompt(name: PromptName) -> str:
    """The text of a packaged role prompt (`grse_graph/team/prompts/<name>.md`)."""
    path = resources.files("grse_graph.team").joinpath("prompts", f"{name}.md")
    return path.read_text(encoding="utf-8").strip()
