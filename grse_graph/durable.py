"""Crash-safe files: whole files replaced atomically, JSONL files appended one synced line at once.

**Atomic replace** (`atomic_write`): the bytes go to a hidden sibling `.<name>.tmp-<token>` in
the same folder (so the rename never crosses file systems), are flushed and fsynced, the sibling
is renamed over the target and the folder is fsynced so the rename itself survives a power cut.
A reader sees the old content or the new one, never a mix. Skill folders recognise the sibling
name as a save leftover and clean it up (`grse_graph.skills.files.recover_leftovers`).

**JSONL** (`append_jsonl`, `read_jsonl`): one JSON object per line, each line appended with one
write and fsynced before the call returns, so a kill can only cut the line being written. The
one policy for what a kill leaves:

- a last line without its trailing newline that is not valid JSON is a torn write: reading drops
  it (logged, and reported as `torn_line`) and the next append cuts it off;
- a last line without its newline that is valid JSON is a finished record whose newline was
  lost (a prefix of a JSON object is never valid JSON): it is read, and the next append ends it;
- any other line that does not parse or validate is corruption, not a crash: an error naming the
  file and the line number.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from grse_graph.errors import GrseError
from grse_graph.validation_text import describe_validation_error

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)

FileWriter = Callable[[Path, bytes], None]
"""Writes bytes to a path that is not yet live. Injectable so tests can simulate a crash."""


# ----- whole files -------------------------------------------------------------------------


def durable_write(path: Path, data: bytes) -> None:
    """The default `FileWriter`: write, flush and fsync one file (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries to disk (a rename or a new file is durable only after this)."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def temporary_sibling(path: Path) -> Path:
    """A fresh hidden `.<name>.tmp-<12 hex digits>` next to `path`."""
    return path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:12]}"


def atomic_write(path: Path, data: bytes, writer: FileWriter = durable_write) -> None:
    """Replace `path` with `data` atomically (temporary sibling file, then rename)."""
    temporary = temporary_sibling(path)
    try:
        writer(temporary, data)
        os.replace(temporary, path)
        fsync_dir(path.parent)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """`atomic_write` of UTF-8 text."""
    atomic_write(path, text.encode("utf-8"))


# ----- JSONL -------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonlLines:
    """The lines of a JSONL file that hold a record, as (1-based line number, bytes)."""

    lines: list[tuple[int, bytes]]
    torn_line: int | None = None
    """The number of a torn last line that was dropped, if any."""


@dataclass(frozen=True)
class JsonlRecords(Generic[R]):
    """The validated records of a JSONL file in file order."""

    records: list[R]
    torn_line: int | None = None
    """The number of a torn last line that was dropped, if any."""


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:  # also a UnicodeDecodeError: a kill can cut inside a character
        return False
    return True


def read_jsonl_lines(path: Path) -> JsonlLines:
    """The non-blank lines of `path` (none if it does not exist), a torn last line dropped."""
    if not path.exists():
        return JsonlLines([])
    # Split the bytes, not decoded text: a torn line may end inside a multi-byte character.
    *finished, tail = path.read_bytes().split(b"\n")
    lines = [(number, line) for number, line in enumerate(finished, start=1) if line.strip()]
    if not tail.strip():
        return JsonlLines(lines)
    number = len(finished) + 1
    if _is_json(tail):
        return JsonlLines([*lines, (number, tail)])
    logger.warning("%s:%d: dropped a torn last line (a write cut short)", path, number)
    return JsonlLines(lines, torn_line=number)


def read_jsonl(
    path: Path, model: type[R], *, error: type[GrseError] = GrseError
) -> JsonlRecords[R]:
    """Every record of `path` validated as `model`; a bad line raises `error` naming file:line."""
    found = read_jsonl_lines(path)
    records: list[R] = []
    for number, line in found.lines:
        try:
            records.append(model.model_validate_json(line))
        except ValidationError as problem:
            raise error(f"{path}:{number}: {describe_validation_error(problem)}") from None
    return JsonlRecords(records, found.torn_line)


def _end_last_line(path: Path) -> None:
    # Without this an append would glue its line onto an unterminated last one.
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        data = handle.read()
        start = data.rfind(b"\n") + 1
        if _is_json(data[start:]):
            handle.write(b"\n")
        else:
            logger.warning("%s:%d: cut off a torn last line", path, data.count(b"\n") + 1)
            handle.truncate(start)


def append_jsonl(path: Path, line: str) -> None:
    """Append one JSON line (no newline inside) and fsync it before returning."""
    if "\n" in line:
        raise ValueError(f"{path}: a JSONL record must be one line")
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not path.exists()
    _end_last_line(path)
    with path.open("ab") as handle:
        # One write: a kill leaves a prefix of this line, never pieces of two.
        handle.write(line.encode("utf-8") + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    if created:
        fsync_dir(path.parent)  # a new file's name is durable only once its folder is synced
