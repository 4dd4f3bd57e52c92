"""Text rendering of passages shared by the passage-based tasks."""

from __future__ import annotations

from collections.abc import Sequence

from grse_graph.tasks.base import Passage


def passage_text(passage: Passage) -> str:
    """The sentences of a passage as one paragraph.

    Official HotpotQA sentences carry their own leading space; stripping and joining with one
    space gives the same paragraph and also works for user sentences without spaces.
    """
    return " ".join(s.strip() for s in passage.sentences if s.strip())


def render_passages(passages: Sequence[Passage]) -> str:
    """`[Passage i] Title` then the passage text on the next line; passages separated by a blank
    line; numbering starts at 1."""
    blocks = []
    for index, passage in enumerate(passages, start=1):
        header = f"[Passage {index}] {passage.title}".rstrip()
        blocks.append(f"{header}\n{passage_text(passage)}")
    return "\n\n".join(blocks)


def render_passage_question(question: str, passages: Sequence[Passage]) -> str:
    """The input of the first agent on a passage question: passages, then the question."""
    if not passages:
        return f"Question: {question}"
    return f"{render_passages(passages)}\n\nQuestion: {question}"
