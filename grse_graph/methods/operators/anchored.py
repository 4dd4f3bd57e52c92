"""Deterministic application of anchored edits to a skill body.

An anchor is text copied from the body. It must match exactly once: first as an exact substring;
if there is no exact match, once more with any run of whitespace in the anchor matching any run
of whitespace in the body (small models often re-wrap lines). No match or several matches ->
the edit is skipped with the reason. Edits apply in order, each to the result of the previous.

- replace: the matched text becomes `text`;
- delete: the matched text is removed (and the line too, if nothing else is left on it);
- insert_after: `text` becomes new line(s) after the line where the match ends;
- insert_before: `text` becomes new line(s) before the line where the match starts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grse_graph.methods.operators.schema import AnchoredEdit, SkippedEdit


def _locate(body: str, anchor: str) -> tuple[int, int] | str:
    """(start, end) of the single match of `anchor`, or the reason it cannot be used."""
    if not anchor.strip():
        return "empty anchor"
    count = body.count(anchor)
    if count == 1:
        start = body.index(anchor)
        return start, start + len(anchor)
    if count > 1:
        return f"ambiguous anchor: found {count} times"
    tokens = anchor.split()
    pattern = re.compile(r"\s+".join(re.escape(t) for t in tokens))
    matches = list(pattern.finditer(body))
    if len(matches) == 1:
        return matches[0].start(), matches[0].end()
    if len(matches) > 1:
        return f"ambiguous anchor: found {len(matches)} times"
    return "anchor not found"


def _apply_one(body: str, edit: AnchoredEdit) -> str | SkippedEdit:
    where = _locate(body, edit.anchor)
    if isinstance(where, str):
        return SkippedEdit(edit=edit, reason=where)
    start, end = where
    if edit.op in ("insert_after", "insert_before") and not edit.text.strip():
        return SkippedEdit(edit=edit, reason=f"{edit.op} with empty text")
    if edit.op == "replace":
        return body[:start] + edit.text + body[end:]
    if edit.op == "delete":
        line_start = body.rfind("\n", 0, start) + 1
        newline = body.find("\n", end)
        line_end = len(body) if newline == -1 else newline
        if (body[line_start:start] + body[end:line_end]).strip():
            return body[:start] + body[end:]
        # The anchor covered whole line(s): drop them with one newline, not leave a blank line.
        if newline != -1:
            return body[:line_start] + body[newline + 1 :]
        return body[: max(line_start - 1, 0)]
    text = edit.text.strip("\n")
    if edit.op == "insert_after":
        line_end = body.find("\n", max(end - 1, start))
        if line_end == -1:
            return body + "\n" + text
        return body[: line_end + 1] + text + "\n" + body[line_end + 1 :]
    line_start = body.rfind("\n", 0, start) + 1
    return body[:line_start] + text + "\n" + body[line_start:]


def apply_anchored_edits(
    body: str, edits: Sequence[AnchoredEdit]
) -> tuple[str, list[AnchoredEdit], list[SkippedEdit]]:
    """Apply `edits` in order; return the new body, the applied edits and the skipped ones."""
    applied: list[AnchoredEdit] = []
    skipped: list[SkippedEdit] = []
    for edit in edits:
        result = _apply_one(body, edit)
        if isinstance(result, SkippedEdit):
            skipped.append(result)
        else:
            body = result
            applied.append(edit)
    return body, applied, skipped
