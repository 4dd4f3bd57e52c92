"""Prompts of the evolution operators, written for this project from the GRSE description.

Short on purpose: the local models have an 8k context.
"""

from __future__ import annotations

# What every drafted or edited skill must be: a general procedure in three parts. The
# memorisation check (`memorisation.py`) enforces the "no names, no copies" half.
PROCEDURE_RULES = """\
A skill is a general procedure for every question of the task, not a memory of one question: \
never write names, titles, places, dates, numbers or facts from the evidence (they appear as \
<name> and <number>), never copy question or passage text. The agent already follows its role: \
never repeat the role's instructions, add what the role does not say. Body parts: "When it \
applies:" the kind of situation; "Steps:" numbered actions; "Check:" how the agent verifies its \
output."""

REFINE_SYSTEM = (
    """\
You improve one skill (instructions an agent follows) using evidence from failed and successful \
runs on several questions. Return a few anchored edits. anchor: text copied exactly from the \
body that occurs once. op: replace (anchor becomes text), insert_after or insert_before (text \
goes on new lines after or before the anchor's line), delete (anchor removed). Change only what \
the evidence supports; keep the skill short.
"""
    + PROCEDURE_RULES
)

REFINE_USER = """\
Agent: {agent}
{context}{guidance}

Skill to refine: {name} - {description}
Body:
{body}

Failure pattern across questions:
{evidence}"""

# How a drafted skill's name is asked for; a name that only echoes it is replaced
# (`text.normalise_name`): both embedded optimizers answered "2-4", "two-to-four" and
# "two-to-four-lowercase-words" on the demo.
NAME_RULE = "two to four lowercase words joined by hyphens that say what the skill does"

# What a whole drafted skill must look like (induce and consolidate both draft one).
DRAFT_RULES = (
    "name: "
    + NAME_RULE
    + """. description: one sentence saying what it does and when to use it. body: markdown, at \
most {max_words} words.
"""
    + PROCEDURE_RULES
)

INDUCE_SYSTEM = (
    "You write one new skill for an agent of a team, from failures that recur across questions. "
    + DRAFT_RULES
)

INDUCE_USER = """\
Agent: {agent}
{context}{guidance}

Existing skills: {existing}
Failure pattern ({support} question(s)): {problem}

What went wrong:
{evidence}

Write the procedure that would avoid this failure on any question of the task."""

# One line per failure type, so the optimizer reads the problem as a kind of failure.
FAILURE_TYPE_HINTS: dict[str, str] = {
    "skill_not_followed": "a skill covered the case but the agent did not follow it",
    "skill_defect": "a skill's instruction caused the failure",
    "missing_capability": "no skill covers what the agent needed to do",
    "handoff_error": "the agent had the information but did not pass it on, or garbled it",
    "evidence_missing": "the evidence for the answer was never found or retrieved",
    "answer_format": "the answer was right in substance but in the wrong form",
    "tool_failure": "a tool failed",
    "uncertain_attribution": "the runs do not show the cause",
}

CONSOLIDATE_SYSTEM = (
    "You merge overlapping skills of one agent into a single skill that keeps every useful "
    "instruction once and drops repetition. " + DRAFT_RULES
)

CONSOLIDATE_USER = """\
Agent: {agent}
{context}{guidance}

Skills to merge:
{skills}

Why they overlap:
{evidence}"""

OPERATOR_PROMPTS: tuple[str, ...] = (
    REFINE_SYSTEM,
    REFINE_USER,
    INDUCE_SYSTEM,
    INDUCE_USER,
    CONSOLIDATE_SYSTEM,
    CONSOLIDATE_USER,
)
"""Every operator prompt: text a skill may repeat without copying the training inputs."""
