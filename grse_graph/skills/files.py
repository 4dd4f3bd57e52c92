"""Filesystem primitives: bounded, boundary-checked reads and crash-safe writes.

Writes never touch a live file or folder in place: a file is written to a hidden temporary
sibling and renamed over the target; a folder is built as a hidden temporary sibling and swapped
in with two renames, so a reader sees either the old complete folder or the new complete one.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from grse_graph.errors import SkillError

FileWriter = Callable[[Path, bytes], None]
"""Writes bytes to a path that is not yet live. Injectable so tests can simulate a crash."""


def durable_write(path: Path, data: bytes) -> None:
    """The default `FileWriter`: write, flush and fsync one file (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _hidden_sibling(target: Path, kind: str) -> Path:
    return target.parent / f".{target.name}.{kind}-{uuid.uuid4().hex[:12]}"


def is_save_leftover(name: str) -> bool:
    """True for the hidden temporary names `atomic_write` and `replace_dir` create."""
    return name.startswith(".") and (".tmp-" in name or ".old-" in name)


def atomic_write(path: Path, data: bytes, writer: FileWriter = durable_write) -> None:
    """Replace `path` with `data` atomically (temporary sibling file, then rename)."""
    temporary = _hidden_sibling(path, "tmp")
    try:
        writer(temporary, data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def replace_dir(target: Path, build: Callable[[Path], None]) -> None:
    """Build a new folder with `build(temporary)` and swap it in for `target`.

    If `build` raises, the temporary folder is removed and `target` is untouched.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = _hidden_sibling(target, "tmp")
    temporary.mkdir()
    try:
        build(temporary)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if not target.exists():
        os.rename(temporary, target)
        return
    old = _hidden_sibling(target, "old")
    os.rename(target, old)
    try:
        os.rename(temporary, target)
    except BaseException:
        os.rename(old, target)
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    shutil.rmtree(old)


def check_inside(path: Path, boundary: Path, what: str) -> None:
    """Raise when `path` (a symlink, typically) resolves outside `boundary`."""
    resolved = path.resolve()
    if not resolved.is_relative_to(boundary.resolve()):
        raise SkillError(f"{path}: symlink points outside the {what} ({resolved})")


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of a regular file no larger than `limit`, or a one-line `SkillError`."""
    if not path.is_file():
        raise SkillError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > limit:
        raise SkillError(f"{path}: {what} is {size} bytes, over the limit of {limit} bytes")
    data = path.read_bytes()
    if len(data) > limit:
        raise SkillError(f"{path}: {what} is over the limit of {limit} bytes")
    return data


def decode_utf8(data: bytes, path: Path) -> str:
    """Strict UTF-8 decoding with the offending byte offset in the error."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillError(
            f"{path}: not valid UTF-8 text (bad byte at offset {error.start})"
        ) from None
