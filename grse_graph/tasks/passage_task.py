"""The shared behaviour of tasks whose questions carry their own passages (no agent tools)."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from grse_graph.tasks.base import TaskKind, TaskQuestion
from grse_graph.tasks.rendering import render_passage_question, render_passages
from grse_graph.tasks.splits import SplitTableTask


class PassageTask(SplitTableTask):
    """Base of passage tasks: the input is the passages then the question; no tools.

    Subclasses set `name` and `categories` and implement `score`.
    """

    kind: TaskKind = "passages"

    def render_input(self, question: TaskQuestion) -> str:
        """The passages (`[Passage i] Title` + text; none when the question has none), then
        `Question: ...`."""
        return render_passage_question(question.question, question.passages)

    def render_full_context(self, question: TaskQuestion) -> str:
        """All passages of the question (empty when it has none)."""
        return render_passages(question.passages)

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]:
        """No tools: the context travels with the question."""
        return []
