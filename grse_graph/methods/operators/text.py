"""Normalising optimizer output into valid skill fields, provenance lines and evidence lines.

Skill bodies are capped in approximate tokens (`grse_graph.skills.text.approx_tokens`: four
characters per token, model independent), so the cap means the same on every engine.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from grse_graph.methods.grse.schema import InductionPattern
from grse_graph.skills import slugify_name
from grse_graph.skills.limits import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS
from grse_graph.skills.text import FRONT_MATTER_DELIMITER, approx_tokens, one_line

DEFAULT_BODY_TOKEN_CAP = 1200
_CHARS_PER_TOKEN = 4
_MAX_QUESTIONS_IN_PROVENANCE = 8


def clean_text(text: str) -> str:
    """Remove characters a SKILL.md may not hold (control characters other than tab/newline,
    surrogates, line/paragraph separators, BOM); models occasionally emit them."""
    out = []
    for char in text.replace("\r\n", "\n").replace("\r", "\n"):
        if char in "\t\n":
            out.append(char)
        elif char in "\u2028\u2029\ufeff" or unicodedata.category(char) in ("Cc", "Cs"):
            continue
        else:
            out.append(char)
    return "".join(out)


def cap_body(body: str, cap_tokens: int = DEFAULT_BODY_TOKEN_CAP) -> tuple[str, bool]:
    """The body cut to at most `cap_tokens` approximate tokens (at a line end when one is in the
    second half of the allowance), and whether it was cut."""
    body = clean_text(body).strip()
    if approx_tokens(body) <= cap_tokens:
        return body, False
    limit = cap_tokens * _CHARS_PER_TOKEN
    cut = body[:limit]
    newline = cut.rfind("\n")
    if newline > limit // 2:
        cut = cut[:newline]
    return cut.rstrip(), True


def normalise_description(text: str, fallback: str) -> str:
    """One line, no front-matter delimiter, at most the spec's 1024 characters."""
    value = one_line(clean_text(text)).replace(FRONT_MATTER_DELIMITER, "-")
    value = re.sub(r"-{3,}", "-", value)
    if not value:
        value = one_line(fallback)
    return value[:MAX_DESCRIPTION_CHARS]


def normalise_name(text: str, fallback: str, taken: Iterable[str]) -> str:
    """A valid skill name from the model's proposal (else `fallback`), unique against `taken`
    by a numeric suffix."""
    try:
        base = slugify_name(text)
    except ValueError:
        base = slugify_name(fallback)
    used = set(taken)
    if base not in used:
        return base
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = base[: MAX_NAME_CHARS - len(suffix)].rstrip("-") + suffix
        if candidate not in used:
            return candidate
        n += 1


def provenance_line(
    operator: str, iteration: int, question_ids: Sequence[str], extra: str = ""
) -> str:
    """One line naming the operator, iteration and supporting questions (the full list is in
    the operator record)."""
    shown = list(question_ids[:_MAX_QUESTIONS_IN_PROVENANCE])
    more = len(question_ids) - len(shown)
    questions = ",".join(shown) + (f",+{more} more" if more > 0 else "")
    parts = [operator, f"iteration={iteration}"]
    if questions:
        parts.append(f"questions={questions}")
    if extra:
        parts.append(extra)
    return one_line(" ".join(parts)).replace(FRONT_MATTER_DELIMITER, "-")


def diagnosis_example_lines(pattern: InductionPattern, max_examples: int) -> list[str]:
    """Prompt lines `- explanation Correction: correction` for the first examples of a pattern
    (the correction is tagged as a hypothesis where the diagnosis says so)."""
    lines = []
    for example in pattern.examples[:max_examples]:
        d = example.diagnosis
        tag = " (hypothesis)" if example.is_hypothesis else ""
        lines.append(f"- {d.explanation} Correction{tag}: {d.correction}")
    return lines
