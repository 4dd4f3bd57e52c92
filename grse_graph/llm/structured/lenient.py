"""Read one JSON object out of a model's text, forgiving the usual small-model slips. The first
that yields an object wins: a balanced top-level ``{...}`` (prose and code fences around it
ignored); the same with Python literals and trailing commas fixed; a truncated last object (the
reply hit its cap) closed, when cut after a complete value; else that object up to its last
complete list item (a critic cut off in its fourth diagnosis keeps three).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
_WORD = re.compile(r"[A-Za-z_]+")
_CLOSERS = {"{": "}", "[": "]"}
# A JSON string from its opening quote: escapes skipped, to its closing quote (group 1) or the end.
_STRING = re.compile(r'"(?:[^"\\]|\\.|\\\Z)*(?:(")|\Z)', re.DOTALL)


@dataclass(frozen=True)
class LenientJson:
    """The object found (None: ``problem`` says why) and which repair made it parse."""

    value: dict[str, Any] | None
    problem: str
    repair: str = ""  # "", "literals", "closed" or "dropped_tail"


def _strings(text: str, start: int) -> Iterator[tuple[int, int, bool]]:
    """(opening quote, index past the closing one, closed) of each JSON string from ``start``."""
    for match in _STRING.finditer(text, start):
        yield match.start(), match.end(), match.group(1) is not None


def _brackets(text: str, start: int) -> Iterator[tuple[int, str, bool]]:
    """(index, bracket) of each bracket outside JSON strings from ``start``, then one final
    ``(len(text), "", whether the text ends inside a string)``."""
    position = start
    ends_in_string = False
    for opening, end, closed in _strings(text, start):
        yield from ((i, text[i], False) for i in range(position, opening) if text[i] in "{}[]")
        position, ends_in_string = end, not closed
    yield from ((i, text[i], False) for i in range(position, len(text)) if text[i] in "{}[]")
    yield len(text), "", ends_in_string


def _scan(text: str, start: int) -> tuple[int | None, list[str], bool]:
    """From the ``{`` at ``start``: (end index of the balanced object or None, the brackets
    still open at the end of ``text``, whether the text ends inside a string)."""
    stack: list[str] = []
    for index, char, ends_in_string in _brackets(text, start):
        if not char:
            return None, stack, ends_in_string
        if char in _CLOSERS:
            stack.append(char)
            continue
        if stack:
            stack.pop()
        if not stack:
            return index, [], False
    raise AssertionError("unreachable: _brackets always ends with its final marker")


def object_spans(text: str) -> tuple[list[str], str | None]:
    """Every balanced top-level ``{...}`` in order, and the unclosed one at the end (or None)."""
    spans: list[str] = []
    position = text.find("{")
    while position != -1:
        end, _, _ = _scan(text, position)
        if end is None:
            return spans, text[position:]
        spans.append(text[position : end + 1])
        position = text.find("{", end + 1)
    return spans, None


def _outside_strings(text: str, fix: Any) -> str:
    pieces: list[str] = []
    position = 0
    for opening, end, _ in _strings(text, 0):
        pieces += [fix(text[position:opening]), text[opening:end]]
        position = end
    pieces.append(fix(text[position:]))
    return "".join(pieces)


def _fix_literals_and_commas(code: str) -> str:
    code = _WORD.sub(lambda match: _PYTHON_LITERALS.get(match.group(0), match.group(0)), code)
    return re.sub(r",(\s*[}\]])", r"\1", code)


def _loads_object(text: str | None) -> dict[str, Any] | None:
    try:
        value = None if text is None else json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _closed(truncated: str) -> str | None:
    """The truncated object with its closing brackets added, or None when it was cut inside a
    string or a value (then a field would be silently shortened or lost)."""
    fixed = _outside_strings(truncated, _fix_literals_and_commas).rstrip()
    _, stack, in_string = _scan(fixed, 0)
    if in_string or not stack:
        return None
    body = fixed[:-1].rstrip() if fixed.endswith(",") else fixed
    if not body or body[-1] not in '"}]0123456789el{[':
        return None  # ends in a colon or a partial literal
    return body + "".join(_CLOSERS[opener] for opener in reversed(stack))


def _without_partial_item(truncated: str) -> str | None:
    """The truncated object up to the end of the last complete object inside a list, closed;
    None when no list holds an object before the cut."""
    fixed = _outside_strings(truncated, _fix_literals_and_commas)
    stack: list[str] = []
    cut: tuple[int, list[str]] | None = None
    for index, char, _ in _brackets(fixed, 0):
        if char in _CLOSERS:
            stack.append(char)
        elif char and stack:
            stack.pop()
            if char == "}" and stack and stack[-1] == "[":
                cut = (index + 1, list(stack))  # a list item that is a complete object
    if cut is None:
        return None
    end, open_brackets = cut
    return fixed[:end] + "".join(_CLOSERS[opener] for opener in reversed(open_brackets))


def _candidates(spans: list[str], unclosed: str | None) -> Iterator[tuple[str | None, str]]:
    yield from ((span, "") for span in spans)
    yield from ((_outside_strings(span, _fix_literals_and_commas), "literals") for span in spans)
    if unclosed is not None:
        yield _closed(unclosed), "closed"
        yield _without_partial_item(unclosed), "dropped_tail"


def parse_json_object(text: str) -> LenientJson:
    """The first JSON object in ``text`` (see the module docstring for what is forgiven)."""
    spans, unclosed = object_spans(text)
    for candidate, repair in _candidates(spans, unclosed):
        value = _loads_object(candidate)
        if value is not None:
            return LenientJson(value, "", repair)
    problem = "the reply contains no JSON object"
    if unclosed is not None:
        problem = "the reply is not valid JSON: the object is cut off before its end"
    for span in spans[:1]:  # the first span did not parse: its error is the one to show
        try:
            json.loads(span)
        except json.JSONDecodeError as error:
            problem = f"the reply is not valid JSON: {error}"
    return LenientJson(None, problem)
