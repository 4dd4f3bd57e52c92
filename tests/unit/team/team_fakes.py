"""A small in-memory task for the team, evaluation and baseline unit tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from grse_graph.tasks.base import Passage, ScoredAnswer, TaskKind, TaskQuestion


def question(qid: str, answer: str = "Osterlin", category: str | None = "bridge", **context: Any):
    """A passage question with one passage."""
    return TaskQuestion(
        id=qid,
        question=f"Where was the founder of {qid} born?",
        answer=answer,
        category=category,
        passages=[Passage(title="Aster Vey", sentences=["Aster Vey was born in Osterlin."])],
        context=dict(context),
    )


class FakeTask:
    """Implements the `Task` protocol. Questions whose context has `tools=True` give the agent at
    position 0 a `search` tool that echoes its query; every tool instance is recorded in
    `tool_calls` with its arguments. Score: exact match (case-insensitive) as f1 and em."""

    name = "fake"

    def __init__(
        self,
        questions: Sequence[TaskQuestion],
        *,
        kind: TaskKind = "passages",
        categories: Sequence[str] = ("bridge", "comparison"),
    ) -> None:
        self.kind: TaskKind = kind
        self.categories = list(categories)
        self._questions = list(questions)
        self.tool_queries: list[str] = []

    def splits(self) -> Mapping[str, Sequence[TaskQuestion]]:
        return {"test": self._questions}

    def split(self, name: str) -> Sequence[TaskQuestion]:
        return self.splits()[name]

    def render_input(self, question: TaskQuestion) -> str:
        return f"[Passage 1] Aster Vey\n\nQuestion: {question.question}"

    def render_full_context(self, question: TaskQuestion) -> str:
        return f"FULL CONTEXT of {question.id}"

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]:
        if not question.context.get("tools") or position != 0:
            return []

        def search(query: str) -> str:
            self.tool_queries.append(query)
            return f"[D1:{len(self.tool_queries)}] result for {query}"

        return [StructuredTool.from_function(search, name="search", description="Search.")]

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        hit = float(prediction.strip().lower() == question.answer.lower())
        return ScoredAnswer(reward=hit, metrics={"f1": hit, "em": hit})
