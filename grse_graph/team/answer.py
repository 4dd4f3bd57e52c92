"""Extracting the short final answer from an agent's or a model's free-text response."""

from __future__ import annotations

import re

# Role prompts ask for a closing `Answer: ...` line; small models also write "Final answer".
_ANSWER_LINE = re.compile(r"^\s*(?:\*\*)?(?:final\s+)?answer(?:\*\*)?\s*[:：]\s*(.*)$", re.I | re.M)


def extract_answer(text: str) -> str:
    """The text after the last `Answer:` line, or the whole stripped response when there is none.

    Markdown emphasis and surrounding quotes are removed so the scorer sees the bare answer.
    """
    matches = [m.group(1) for m in _ANSWER_LINE.finditer(text)]
    candidate = matches[-1] if matches else text
    candidate = candidate.strip().strip("*").strip()
    if len(candidate) >= 2 and candidate[0] == candidate[-1] and candidate[0] in "\"'`":
        candidate = candidate[1:-1].strip()
    return candidate
