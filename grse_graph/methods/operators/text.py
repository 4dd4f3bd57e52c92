"""Normalising optimizer output into valid skill fields, provenance lines and evidence lines.

Skill bodies are capped in tokens: the optimizer model's own count in training (its server's
tokenizer, `grse_graph.llm.tokens`), or the model-independent estimate
(`grse_graph.skills.text.approx_tokens`: four characters per token) where no counter is given.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence

from grse_graph.methods.operators.prompts import NAME_RULE
from grse_graph.methods.plan import InductionPattern
from grse_graph.skills import slugify_name
from grse_graph.skills.limits import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS
from grse_graph.skills.text import FRONT_MATTER_DELIMITER, approx_tokens, one_line

DEFAULT_BODY_TOKEN_CAP = 1200
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


def cap_body(
    body: str,
    cap_tokens: int = DEFAULT_BODY_TOKEN_CAP,
    count: Callable[[str], int] = approx_tokens,
) -> tuple[str, bool]:
    """The body cut to at most `cap_tokens` tokens as `count` counts them (default: the
    four-characters estimate; training passes the optimizer model's own count), at a line end
    when one is in the second half of the kept text, and whether it was cut."""
    body = clean_text(body).strip()
    if count(body) <= cap_tokens:
        return body, False
    # The longest prefix within the cap, by bisection over its length in characters.
    low, high = 0, len(body)
    while low < high:
        middle = (low + high + 1) // 2
        if count(body[:middle]) <= cap_tokens:
            low = middle
        else:
            high = middle - 1
    cut = body[:low]
    newline = cut.rfind("\n")
    if newline > low // 2:
        cut = cut[:newline]
    return cut.rstrip(), True


def normalise_description(text: str, fallback: str) -> str:
    """One line, no front-matter delimiter, at most the spec's 1024 characters."""
    value = one_line(clean_text(text)).replace(FRONT_MATTER_DELIMITER, "-")
    value = re.sub(r"-{3,}", "-", value)
    if not value:
        value = one_line(fallback)
    return value[:MAX_DESCRIPTION_CHARS]


def _word_stem(word: str) -> str:
    return word[:-1] if word.endswith("s") else word


_NAME_RULE_STEMS = frozenset(_word_stem(w) for w in slugify_name(NAME_RULE).split("-"))


def _echoes_name_rule(name: str) -> bool:
    """Whether most of a name's words are words of the name rule: the 1.5B optimizer
    answered "two-to-four-hypen-word-skill-with-hyphens-description"."""
    words = name.split("-")
    echoed = sum(_word_stem(w) in _NAME_RULE_STEMS for w in words)
    return echoed * 2 > len(words)


def normalise_name(text: str, fallback: str, taken: Iterable[str]) -> str:
    """A valid skill name from the model's proposal (else `fallback`), unique against `taken`
    by a numeric suffix. A proposal without a letter ("2-4") or that only echoes the prompt's
    name rule (most of its words are the rule's, as in "two-to-four-lowercase-words")
    names nothing and takes the fallback too."""
    try:
        base = slugify_name(text)
    except ValueError:
        base = slugify_name(fallback)
    if not re.search("[a-z]", base) or _echoes_name_rule(base):
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
    (the correction is tagged as a hypothesis where the diagnosis says so), each followed by
    how the agent's output ended in a failed and a successful run where that is known."""
    lines = []
    for example in pattern.examples[:max_examples]:
        d = example.diagnosis
        tag = " (hypothesis)" if example.is_hypothesis else ""
        seen = f" {example.contrast.text()}" if example.contrast is not None else ""
        lines.append(f"- {d.explanation} Correction{tag}: {d.correction}{seen}")
    return lines
