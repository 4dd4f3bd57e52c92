"""Character rules shared by every text field of a skill, and one-line error formatting."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from typing import TypeVar

Key = TypeVar("Key", str, tuple[str, str])

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


def shown(value: object) -> str:
    """`value` as text that is safe to print on a terminal and stays on one line.

    Control and format characters (escape sequences, newlines, bidi overrides) are written as
    Python escapes (`\\x1b`, `\\n`, `\\u202e`) and undecodable bytes of file names as
    `\\xNN`, so a hostile name or description can neither drive the terminal nor hide a line.
    """
    out: list[str] = []
    for char in str(value):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that `surrogateescape` kept from a file name
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char == " " or char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])
    return "".join(out)


def one_line(text: str) -> str:
    """Collapse any whitespace run (including newlines) into one space."""
    return re.sub(r"\s+", " ", text).strip()


def approx_tokens(text: str) -> int:
    """A model-independent token estimate: about four characters per token, rounded up."""
    return (len(text) + 3) // 4


def first_repeat(keys: Iterable[Key]) -> Key | None:
    """The smallest key that occurs more than once, or None: smallest, so a list with several
    repeats is always reported by the same one."""
    return next((a for a, b in itertools.pairwise(sorted(keys)) if a == b), None)
