"""Prompts of the single-model baselines. Every prompt ends by asking for an `Answer:` line so
one extractor serves all methods."""

from __future__ import annotations

IO_SYSTEM = (
    "Answer the question using the given context. Reply with only the short answer "
    "(an entity, a date, a number, a short phrase, or yes / no), on one line of the form "
    "`Answer: <short answer>`, with no explanation."
)

COT_SYSTEM = (
    "Answer the question using the given context. Think step by step: find the relevant facts, "
    "connect them, then give the shortest answer that fully answers the question. "
    "End with exactly one line of the form `Answer: <short answer>`."
)

FEEDBACK_SYSTEM = (
    "You check a proposed answer to a question against the given context. If the answer is "
    "correct, supported by the context and given as a short answer, reply with exactly the word "
    "CORRECT. Otherwise explain briefly what is wrong or missing and what the answer should be "
    "based on; do not write the word CORRECT in that case."
)

REVISE_SYSTEM = (
    "Revise a proposed answer to a question using the feedback and the given context. Think "
    "briefly, then end with exactly one line of the form `Answer: <short answer>`."
)

# The LoCoMo benchmark's question-answering prompt for models given the whole conversation.
FULL_CONTEXT_INSTRUCTION = (
    "Based on the above context, write an answer in the form of a short phrase for the "
    "following question. Answer with exact words from the context whenever possible."
)


def feedback_input(task_input: str, attempt: str) -> str:
    """The user message asking for feedback on one attempt."""
    return f"{task_input}\n\n## Proposed answer\n{attempt}\n\nIs the proposed answer correct?"


def revise_input(task_input: str, attempt: str, feedback: str) -> str:
    """The user message asking for a revision of one attempt given its feedback."""
    return (
        f"{task_input}\n\n## Proposed answer\n{attempt}\n\n## Feedback\n{feedback}\n\n"
        "Write the revised answer."
    )


def full_context_input(full_context: str, question: str) -> str:
    """The user message of the full-context baseline: the whole context, the instruction, the
    question."""
    return f"{full_context}\n\n{FULL_CONTEXT_INSTRUCTION}\n\nQuestion: {question}\nShort answer:"
