"""Prompts of the single-model baselines.

Every baseline sends one user message and no system prompt (GRSE App. F): the instruction of a
method is part of that message, after the task input. Every instruction asks for an `Answer:`
line so one extractor serves all methods (the full-context protocol is the exception: it asks
for the short answer itself, as the LoCoMo benchmark does).
"""

from __future__ import annotations

IO_INSTRUCTION = (
    "Answer the question using the given context. Reply with only the short answer "
    "(an entity, a date, a number, a short phrase, or yes / no), on one line of the form "
    "`Answer: <short answer>`, with no explanation."
)

COT_INSTRUCTION = (
    "Answer the question using the given context. Think step by step: find the relevant facts, "
    "connect them, then give the shortest answer that fully answers the question. "
    "End with exactly one line of the form `Answer: <short answer>`."
)

FEEDBACK_INSTRUCTION = (
    "Check the proposed answer to the question against the given context. If the answer is "
    "correct, supported by the context and given as a short answer, reply with exactly the word "
    "CORRECT. Otherwise explain briefly what is wrong or missing and what the answer should be "
    "based on; do not write the word CORRECT in that case."
)

REVISE_INSTRUCTION = (
    "Revise the proposed answer to the question using the feedback and the given context. Think "
    "briefly, then end with exactly one line of the form `Answer: <short answer>`."
)

# The LoCoMo benchmark's question-answering prompt for models given the whole conversation
# (`QA_PROMPT` of its task_eval); the question comes with the benchmark's category suffix.
FULL_CONTEXT_INSTRUCTION = (
    "Based on the above context, write an answer in the form of a short phrase for the "
    "following question. Answer with exact words from the context whenever possible."
)


def single_input(task_input: str, instruction: str) -> str:
    """The one user message of an IO or CoT call: the task input, then the instruction."""
    return f"{task_input}\n\n{instruction}"


def feedback_input(task_input: str, attempt: str) -> str:
    """The user message asking for feedback on one attempt."""
    return (
        f"{task_input}\n\n## Proposed answer\n{attempt}\n\n{FEEDBACK_INSTRUCTION}\n\n"
        "Is the proposed answer correct?"
    )


def revise_input(task_input: str, attempt: str, feedback: str) -> str:
    """The user message asking for a revision of one attempt given its feedback."""
    return (
        f"{task_input}\n\n## Proposed answer\n{attempt}\n\n## Feedback\n{feedback}\n\n"
        f"{REVISE_INSTRUCTION}"
    )


def full_context_input(full_context: str, question: str) -> str:
    """The user message of the full-context baseline: the whole context, the instruction, the
    question (already carrying the benchmark's category suffix)."""
    return f"{full_context}\n\n{FULL_CONTEXT_INSTRUCTION}\n\nQuestion: {question} Short answer:"
