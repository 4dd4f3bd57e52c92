"""Character rules shared by every text field of a skill, and one-line error formatting."""

from __future__ import annotations

import re
import unicodedata

# Front-matter values may not contain this: several SKILL.md readers (the `skills-ref`
# reference validator among them) split the file on the first two occurrences of it.
FRONT_MATTER_DELIMITER = "---"

_EXTRA_FORBIDDEN = {"\u2028", "\u2029", "\ufeff"}


def forbidden_character(text: str) -> str | None:
    """The first character a skill text may not contain (control characters other than tab and
    newline, surrogates, Unicode line/paragraph separators, BOM), or None when the text is clean.

    Such characters do not survive YAML and line-based tools unchanged, so they are rejected
    instead of being silently altered.
    """
    for char in text:
        if char in "\t\n":
            continue
        if char in _EXTRA_FORBIDDEN or unicodedata.category(char) in ("Cc", "Cs"):
            return char
    return None


def one_line(text: str) -> str:
    """Collapse any whitespace run (including newlines) into one space."""
    return re.sub(r"\s+", " ", text).strip()


def approx_tokens(text: str) -> int:
    """A model-independent token estimate: about four characters per token, rounded up."""
    return (len(text) + 3) // 4
