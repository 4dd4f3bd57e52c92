"""The small literal vocabularies a team is described with (kept apart to avoid import cycles)."""

from __future__ import annotations

from typing import Literal

# How an agent receives its library: bodies in the system prompt, an index plus `load_skill`, or
# an index of `/skills/<name>/SKILL.md` paths plus `read_file` (see `team/disclosure.py`).
SkillMode = Literal["inline", "tool", "path"]
# What a question carries: passages in the input, or a conversation searched with tools.
QuestionKind = Literal["passages", "conversation"]
