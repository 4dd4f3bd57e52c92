"""Task guidance for the operators: what the optimizer should know about the task it writes for.

Each task has a short description of what its questions are and how they are scored (the
"task" the optimizer is shown beside the agent's role). GRSE App. F also gives the LoCoMo
operators category-specific prompts when training on one category. Both are data here:
`OPERATOR_GUIDANCE` maps a task name to its guidance, under `TASK_WIDE` for every run and under
a category name for runs that keep only that category, and `operator_guidance(task)` selects
through the task itself (its name and the categories it keeps), so a new task or category is a
new entry, not a branch. A task that keeps several categories (LoCoMo `mixed`, the demo) gets
its task-wide guidance only, as in the paper's mixed runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from grse_graph.tasks.base import Task

TASK_WIDE = "*"
"""The key of a task's guidance for every run, whatever categories it keeps."""

LOCOMO_OPERATOR_GUIDANCE: Mapping[str, str] = MappingProxyType(
    {
        TASK_WIDE: (
            "The questions are about one long conversation between two speakers. The first "
            "agent searches it with a grep tool (at most 3 calls) and hands the turns it found "
            "on; the second answers from that hand-off only. Answers are short and scored by "
            "F1 and BLEU against a short gold answer."
        ),
        "multi-hop": (
            "This run trains on LoCoMo multi-hop questions: the answer combines facts stated in "
            "several turns, often in different sessions. Useful skills make the agent search "
            "for each part of the question separately, keep every item it finds with its "
            "dialogue id, and answer with all items, separated by commas."
        ),
        "temporal": (
            "This run trains on LoCoMo temporal questions: the answer is a date, a time span or "
            "an order of events. Useful skills make the agent keep the session date of every "
            "turn it hands on, resolve relative expressions (last week, yesterday, two years "
            "ago) against that session date, and answer with the date or span itself."
        ),
        "open-domain": (
            "This run trains on LoCoMo open-domain questions: the answer is usually not stated "
            "word for word and has to be inferred from what the speakers say about themselves "
            "(plans, preferences, character, circumstances). Useful skills make the agent "
            "gather those statements and give the most likely answer, for example Likely yes, "
            "instead of saying the information is not mentioned."
        ),
        "single-hop": (
            "This run trains on LoCoMo single-hop questions: the answer is stated in one turn. "
            "Useful skills make the agent find that turn with precise keywords and alternative "
            "wordings, and answer briefly with the words of that turn."
        ),
    }
)
"""Operator guidance per LoCoMo category (after GRSE App. F; written for this project)."""

HOTPOTQA_OPERATOR_GUIDANCE: Mapping[str, str] = MappingProxyType(
    {
        TASK_WIDE: (
            "The questions are HotpotQA multi-hop questions over ten passages, some of them "
            "distractors; the answer needs facts from two passages linked by a bridge entity. "
            "The answer is a short entity, date, number or yes / no, scored by token F1 against "
            "a short gold answer, so extra words cost reward."
        )
    }
)

DEMO_OPERATOR_GUIDANCE: Mapping[str, str] = MappingProxyType(
    {
        TASK_WIDE: (
            "The questions mix multi-hop questions over numbered passages (the answer needs "
            "two passages linked by a bridge entity) and questions about one long conversation "
            "that the first agent searches with a grep tool. Answers are short and scored "
            "against a short gold answer, so extra words cost reward."
        )
    }
)

OPERATOR_GUIDANCE: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "locomo": LOCOMO_OPERATOR_GUIDANCE,
        "hotpotqa": HOTPOTQA_OPERATOR_GUIDANCE,
        "demo": DEMO_OPERATOR_GUIDANCE,
    }
)
"""Task name -> `TASK_WIDE` or a category -> the operators' guidance."""


def operator_guidance(
    task: Task, table: Mapping[str, Mapping[str, str]] = OPERATOR_GUIDANCE
) -> str:
    """The guidance for the operators of a run on `task`: its task-wide entry, then its
    category's entry when the task keeps exactly one category that `table` knows."""
    entries = table.get(task.name, {})
    parts = [entries.get(TASK_WIDE, "")]
    if len(task.categories) == 1:
        parts.append(entries.get(task.categories[0], ""))
    return " ".join(p for p in parts if p)
