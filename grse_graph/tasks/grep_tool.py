"""The conversation grep tool given to the retriever agent.

Query semantics (also told to the agent in the tool description):

1. The query is a case-insensitive regular expression searched in each rendered turn line
   (`[D<session>:<turn>] (<date>) <speaker> said, "<text>"` plus any image caption); use `a|b`
   for alternatives. A query that is not a valid regular expression is searched as plain text.
2. When that finds nothing and the query has keywords (words of 3+ letters that are not common
   stop words), turns containing any keyword are returned instead, ranked by how many distinct
   keywords they contain (ties in conversation order).

At most `max_results` turns are shown per call, and the reply says when results were cut.
Each tool instance allows `max_calls` calls; later calls return a limit message. A tool is
built per rollout, so the budget is per rollout; the tool records nothing outside itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field

from grse_graph.tasks.conversation import Conversation

GREP_TOOL_NAME = "grep"
MAX_QUERY_CHARS = 200
_WORD = re.compile(r"[a-z0-9']+")
_STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "did",
        "does",
        "do",
        "has",
        "have",
        "had",
        "with",
        "from",
        "that",
        "this",
        "these",
        "those",
        "you",
        "your",
        "his",
        "her",
        "hers",
        "him",
        "she",
        "they",
        "them",
        "their",
        "there",
        "about",
        "into",
        "over",
        "after",
        "before",
        "said",
        "not",
        "but",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "been",
        "being",
        "its",
        "it's",
        "our",
        "out",
        "any",
        "all",
        "some",
    ]
)


class GrepArgs(BaseModel):
    """Arguments of the grep tool."""

    query: str = Field(
        description=(
            "Case-insensitive regular expression or keywords to find in the conversation, "
            "e.g. 'birthday|party' or 'adopt'."
        )
    )


class GrepResult(BaseModel):
    """What one search found: matching lines (already cut) and how it matched."""

    model_config = ConfigDict(frozen=True)

    mode: str  # "regex", "literal" or "keywords"
    total: int
    lines: tuple[str, ...]
    keywords: tuple[str, ...] = ()


def keywords_of(query: str) -> list[str]:
    """Distinct keywords of a query, in order: lowercase words of 3+ characters, no stop words."""
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        word = word.strip("'")
        if len(word) >= 3 and word not in _STOP_WORDS and word not in seen:
            seen.append(word)
    return seen


class ConversationIndex:
    """Rendered turn lines of one conversation with the search described in the module doc."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = tuple(lines)
        self._lower = tuple(line.lower() for line in self._lines)

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationIndex:
        """Index every turn of a conversation."""
        return cls(conversation.rendered_turns())

    def search(self, query: str, max_results: int) -> GrepResult:
        """Run one query; at most `max_results` lines are kept, `total` counts all matches."""
        try:
            pattern = re.compile(query, re.IGNORECASE)
            mode = "regex"
        except re.error:
            pattern = re.compile(re.escape(query), re.IGNORECASE)
            mode = "literal"
        hits = [line for line in self._lines if pattern.search(line)]
        if hits:
            return GrepResult(mode=mode, total=len(hits), lines=tuple(hits[:max_results]))
        words = keywords_of(query)
        if not words:
            return GrepResult(mode=mode, total=0, lines=())
        # A keyword matches at a word start, so "adopt" finds "adoption" but "art" not "party".
        patterns = [re.compile(r"\b" + re.escape(w)) for w in words]
        ranked: list[tuple[int, int]] = []
        for position, lower in enumerate(self._lower):
            found = sum(1 for p in patterns if p.search(lower))
            if found:
                ranked.append((-found, position))
        ranked.sort()
        lines = tuple(self._lines[position] for _, position in ranked[:max_results])
        return GrepResult(mode="keywords", total=len(ranked), lines=lines, keywords=tuple(words))


def format_result(query: str, result: GrepResult, max_results: int) -> str:
    """The text the agent reads for one search."""
    note = ""
    if result.mode == "literal" or (result.mode == "keywords" and _is_bad_regex(query)):
        note = f"'{query}' is not a valid regular expression, so it was searched as plain text. "
    if result.total == 0:
        return f"{note}No turn matches '{query}'. Try other words or a shorter pattern."
    if result.mode == "keywords":
        head = (
            f"No turn matches '{query}' as a pattern; showing turns with the most of the "
            f"keywords {', '.join(result.keywords)}"
        )
    else:
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


def _is_bad_regex(query: str) -> bool:
    try:
        re.compile(query)
    except re.error:
        return True
    return False


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
        if len(query) > MAX_QUERY_CHARS:
            return f"The query is too long (over {MAX_QUERY_CHARS} characters). Use a few words."
        result = search_index.search(query, max_results)
        left = budget.max_calls - budget.used
        calls = "call" if left == 1 else "calls"
        return format_result(query, result, max_results) + f"\n[{left} grep {calls} left]"

    description = (
        f"Search the conversation between {conversation.speaker_a} and {conversation.speaker_b}. "
        "The query is a case-insensitive regular expression (use a|b for alternatives); if "
        "nothing matches, turns with the most query keywords are returned. Each result line is "
        '[D<session>:<turn>] (<session date>) <speaker> said, "<text>". '
        f"At most {max_results} turns per call and {max_calls} calls per question."
    )
    return StructuredTool.from_function(
        func=grep,
        name=GREP_TOOL_NAME,
        description=description,
        args_schema=GrepArgs,
    )
