"""The conversation grep tool given to the retriever agent.

Query semantics (also told to the agent in the tool description), as in the GRSE paper:

1. The query is a case-insensitive regular expression searched in what was said in each turn:
   its text and, for a turn that shared an image, the image caption. The dialogue id, session
   date and speaker name are shown in the result line but are not searched, so a query on a
   month or a speaker's name finds only turns that talk about it. Use `a|b` for alternatives.
   A query that is not a valid regular expression is searched as plain text.
2. When nothing matches, nothing is returned (the reply says no turn matches); there is no
   fallback, so a retriever whose patterns are too narrow ends with no evidence.
3. A search runs under a time budget (`REGEX_TIME_BUDGET_S` for the whole conversation):
   a pattern the model wrote that backtracks catastrophically is stopped and reported.

At most `max_results` turns are shown per call, and the reply says when results were cut.
Each tool instance allows `max_calls` calls; later calls return a limit message. A tool is
built per rollout, so the budget is per rollout; the tool records nothing outside itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

import regex
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grse_graph.tasks.conversation import Conversation, searchable_text

GREP_TOOL_NAME = "grep"
MAX_QUERY_CHARS = 200
TOO_LONG = f"The query is too long (over {MAX_QUERY_CHARS} characters). Use a few words."
REGEX_TIME_BUDGET_S = 1.0
"""Wall time one search may spend matching the whole conversation."""

SearchMode = Literal["regex", "literal", "timeout"]


class GrepArgs(BaseModel):
    """Arguments of the grep tool."""

    # The bound is part of the schema, so a grammar-constrained engine cannot write a query
    # past it (the 0.5B model under greedy decoding wrote one until the call's 512-token cap
    # and the call came back unparsable); a longer query from an engine that ignores the
    # schema gets the tool's one-line answer (`handle_validation_error`).
    query: str = Field(
        description=(
            "Case-insensitive regular expression or words to find in what was said, "
            "e.g. 'birthday|party' or 'adopt'."
        ),
        max_length=MAX_QUERY_CHARS,
    )


def _invalid_arguments(error: ValidationError) -> str:
    """The tool's answer to arguments that do not fit `GrepArgs` (one line for the model)."""
    if any(item["type"] == "string_too_long" for item in error.errors()):
        return TOO_LONG
    return "Invalid arguments: call grep with one argument, query (words or a regex)."


class GrepResult(BaseModel):
    """What one search found: matching lines (already cut) and how it matched."""

    model_config = ConfigDict(frozen=True)

    mode: SearchMode
    total: int
    lines: tuple[str, ...]


class ConversationIndex:
    """Turn lines of one conversation (shown) and their said text (searched)."""

    def __init__(self, lines: Sequence[str], texts: Sequence[str]) -> None:
        if len(lines) != len(texts):
            raise ValueError("every shown line needs its searchable text")
        self._lines = tuple(lines)
        self._texts = tuple(texts)

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationIndex:
        """Index every turn of a conversation."""
        turns = [turn for session in conversation.sessions for turn in session.turns]
        return cls(conversation.rendered_turns(), [searchable_text(turn) for turn in turns])

    def search(
        self, query: str, max_results: int, time_budget_s: float = REGEX_TIME_BUDGET_S
    ) -> GrepResult:
        """Run one query; at most `max_results` lines are kept, `total` counts all matches.

        Matching stops with mode "timeout" (and no lines) once `time_budget_s` is spent.
        """
        mode: SearchMode
        try:
            pattern = regex.compile(query, regex.IGNORECASE)
            mode = "regex"
        except regex.error:
            pattern = regex.compile(regex.escape(query), regex.IGNORECASE)
            mode = "literal"
        deadline = time.monotonic() + time_budget_s
        hits: list[str] = []
        for line, text in zip(self._lines, self._texts, strict=True):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                found = pattern.search(text, timeout=left)
            except TimeoutError:
                return GrepResult(mode="timeout", total=0, lines=())
            if found:
                hits.append(line)
        return GrepResult(mode=mode, total=len(hits), lines=tuple(hits[:max_results]))


def format_result(query: str, result: GrepResult, max_results: int) -> str:
    """The text the agent reads for one search."""
    if result.mode == "timeout":
        return (
            f"The pattern '{query}' took too long to match and was stopped. "
            "Use plain words or a simpler pattern."
        )
    note = ""
    if result.mode == "literal":
        note = f"'{query}' is not a valid regular expression, so it was searched as plain text. "
    if result.total == 0:
        return f"{note}No turn matches '{query}'."
    head = f"Turns matching '{query}'"
    shown = len(result.lines)
    if result.total > shown:
        head += (
            f" (showing {shown} of {result.total} matches; results were cut at {max_results}, "
            "use a narrower query to see others)"
        )
    else:
        head += f" ({result.total} {'match' if result.total == 1 else 'matches'})"
    return note + head + ":\n" + "\n".join(result.lines)


def pattern_problem(query: str) -> str | None:
    """Why `query` is not a valid regular expression (the search then takes it as plain
    text), or None when it is one. The ``text`` tool protocol counts such a call as an
    `invalid_argument` event (`grse_graph.team.text_calls`)."""
    try:
        regex.compile(query.strip(), regex.IGNORECASE)
    except regex.error as error:
        return f"'{query.strip()}' is not a valid regular expression ({error})"
    return None


class _CallBudget:
    """Calls left for one tool instance (one rollout)."""

    def __init__(self, max_calls: int) -> None:
        self.max_calls = max_calls
        self.used = 0


def make_grep_tool(
    conversation: Conversation,
    *,
    max_calls: int = 3,
    max_results: int = 20,
    index: ConversationIndex | None = None,
    time_budget_s: float = REGEX_TIME_BUDGET_S,
) -> BaseTool:
    """A fresh grep tool over one conversation with its own call budget.

    Pass a prebuilt `index` to avoid re-rendering a long conversation for every rollout.
    """
    search_index = index or ConversationIndex.of(conversation)
    budget = _CallBudget(max_calls)

    def grep(query: str) -> str:
        if budget.used >= budget.max_calls:
            return (
                f"Search limit reached: all {budget.max_calls} grep calls for this question are "
                "used. Answer with the evidence you already have."
            )
        budget.used += 1
        query = query.strip()
        if not query:
            return "The query is empty. Give a word or a regular expression to search for."
        result = search_index.search(query, max_results, time_budget_s)
        left = budget.max_calls - budget.used
        calls = "call" if left == 1 else "calls"
        return format_result(query, result, max_results) + f"\n[{left} grep {calls} left]"

    description = (
        f"Search the conversation between {conversation.speaker_a} and {conversation.speaker_b}. "
        "The query is a case-insensitive regular expression (use a|b for alternatives) matched "
        "against what was said in each turn (not the date or the speaker's name); nothing is "
        "returned when nothing matches. Each result line is "
        '[D<session>:<turn>] (<session date>) <speaker> said, "<text>". '
        f"At most {max_results} turns per call and {max_calls} calls per question."
    )
    return StructuredTool.from_function(
        func=grep,
        name=GREP_TOOL_NAME,
        description=description,
        args_schema=GrepArgs,
        handle_validation_error=_invalid_arguments,
    )
