"""Prompts of the evolution operators, written for this project from the GRSE description.

Short on purpose: the local models have an 8k context.
"""

from __future__ import annotations

REFINE_SYSTEM = """\
You improve one skill (instructions an agent follows) using evidence from failed and successful \
runs. Return a few anchored edits. anchor: text copied exactly from the body that occurs once. \
op: replace (anchor becomes text), insert_after or insert_before (text goes on new lines after or \
before the anchor's line), delete (anchor removed). Change only what the evidence supports; keep \
the skill short."""

REFINE_USER = """\
Agent: {agent}
{context}

Skill to refine: {name} - {description}
Body:
{body}

Evidence:
{evidence}"""

INDUCE_SYSTEM = """\
You write one new skill for an agent: short markdown instructions the agent follows, learned \
from failures of a team. name: 2-4 lowercase words joined by hyphens. description: one sentence \
saying what it does and when to use it. body: concrete steps and checks, at most {max_words} \
words. Do not copy question-specific facts; write general rules."""

INDUCE_USER = """\
Agent: {agent}
{context}

Existing skills: {existing}
Recurring problem ({support} question(s)): {problem}

Evidence:
{evidence}"""

CONSOLIDATE_SYSTEM = """\
You merge overlapping skills of one agent into a single skill that keeps every useful \
instruction once and drops repetition. name: 2-4 lowercase words joined by hyphens. description: \
one sentence saying what it does and when to use it. body: markdown, at most {max_words} words."""

CONSOLIDATE_USER = """\
Agent: {agent}
{context}

Skills to merge:
{skills}

Why they overlap:
{evidence}"""
