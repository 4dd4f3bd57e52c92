"""Readable unified diffs between skills and between libraries.

Diff text is meant for a reviewer's terminal, so every line is escaped with `shown` (tabs kept):
a resource with `\\r`, an escape sequence or a bidi override cannot hide or fake a line.
"""

from __future__ import annotations

import difflib
import hashlib
import re

from .model import Skill
from .text import shown


def _safe(line: str) -> str:
    """One diff line made terminal-safe, its newline kept and tabs left as tabs."""
    content = line[:-1] if line.endswith("\n") else line
    return "\t".join(shown(part) for part in content.split("\t")) + "\n"


def _lines(text: str) -> list[str]:
    """Lines ending in "\\n" (the last one may lack it); only "\\n" breaks a line."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _resource_lines(path: str, old: bytes | None, new: bytes | None, name: str) -> list[str]:
    def text(data: bytes | None) -> list[str] | None:
        if data is None:
            return []
        try:
            # Split on "\n" only: other line breaks (\r, \u2028) are shown escaped, in place.
            return _lines(data.decode("utf-8"))
        except UnicodeDecodeError:
            return None

    old_text, new_text = text(old), text(new)
    if old_text is None or new_text is None:

        def describe(data: bytes | None) -> str:
            if data is None:
                return "absent"
            return f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}"

        return [_safe(f"Binary resource {name}/{path} differs: {describe(old)} -> {describe(new)}")]
    return _unified(old_text, new_text, f"{name}/{path}", old is None, new is None)


def _unified(
    old: list[str], new: list[str], label: str, old_absent: bool, new_absent: bool
) -> list[str]:
    lines = list(
        difflib.unified_diff(
            old,
            new,
            fromfile="/dev/null" if old_absent else f"a/{label}",
            tofile="/dev/null" if new_absent else f"b/{label}",
        )
    )
    # difflib leaves the last line without a newline when the text lacks one.
    return [_safe(line) for line in lines]


def skill_diff(old: Skill | None, new: Skill | None) -> str:
    """Unified diff of SKILL.md text and resources from `old` to `new` (None: absent)."""
    present = new if new is not None else old
    name = present.name if present is not None else "?"
    old_md = _lines(old.to_markdown()) if old is not None else []
    new_md = _lines(new.to_markdown()) if new is not None else []
    lines = _unified(old_md, new_md, f"{name}/SKILL.md", old is None, new is None)
    old_res = old.resources if old is not None else {}
    new_res = new.resources if new is not None else {}
    for path in sorted(set(old_res) | set(new_res)):
        before, after = old_res.get(path), new_res.get(path)
        if before != after:
            lines.extend(_resource_lines(path, before, after, name))
    lines.extend(_mode_lines(old, new, name))
    return "".join(lines)


def _mode_lines(old: Skill | None, new: Skill | None, name: str) -> list[str]:
    """A line per resource kept on both sides whose exec bit changed (else the diff of a
    skill that differs only there would be empty)."""
    if old is None or new is None:
        return []
    flipped = set(old.executables) ^ set(new.executables)
    kept = sorted(p for p in flipped if p in old.resources and p in new.resources)
    words = {True: "executable", False: "not executable"}
    return [
        _safe(
            f"Mode of {name}/{path}: {words[path in old.executables]} -> "
            f"{words[path in new.executables]}"
        )
        for path in kept
    ]


def library_diff(
    old: dict[str, Skill], new: dict[str, Skill], old_label: str, new_label: str
) -> str:
    """Summary plus per-skill unified diffs from `old` to `new` (both keyed by skill name)."""
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = sorted(n for n in set(old) & set(new) if old[n] != new[n])
    header = f"--- {shown(old_label)}\n+++ {shown(new_label)}\n"
    if not (added or removed or changed):
        return header + "no differences\n"
    summary = [
        f"added: {', '.join(added) or '-'}",
        f"removed: {', '.join(removed) or '-'}",
        f"changed: {', '.join(changed) or '-'}",
    ]
    parts = [header, "\n".join(summary) + "\n"]
    for name in sorted(added + removed + changed):
        kind = "added" if name in added else "removed" if name in removed else "changed"
        parts.append(f"\n=== {kind}: {name}\n")
        parts.append(skill_diff(old.get(name), new.get(name)))
    return "".join(parts)
