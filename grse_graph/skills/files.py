"""Crash-safe writes: files renamed into place, folders swapped in with a recoverable scheme.

A file is written to a hidden sibling `.<name>.tmp-<token>` and renamed over the target. A
folder is built completely as `.<name>.tmp-<token>`, then swapped in: the live folder is renamed
to `.<name>.old-<token>`, the new one to `<name>`, and the old one removed. A kill at any point
leaves a state `recover_leftovers` (called by every save and by the loading API) turns back into
a complete folder: if `<name>` is missing but `.<name>.old-<token>` exists, the swap was cut
between its two renames and the old folder is put back; any other leftover is removed. Only
names of exactly this form are ever touched, and never through a symlink.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

FileWriter = Callable[[Path, bytes], None]
"""Writes bytes to a path that is not yet live. Injectable so tests can simulate a crash."""

_LEFTOVER = re.compile(r"^\.(?P<target>.+)\.(?P<kind>tmp|old)-(?P<token>[0-9a-f]{12})$")


def durable_write(path: Path, data: bytes) -> None:
    """The default `FileWriter`: write, flush and fsync one file (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def is_save_leftover(name: str) -> bool:
    """True for the hidden temporary names `atomic_write` and `replace_dir` create."""
    return _LEFTOVER.fullmatch(name) is not None


def _sibling(target: Path, kind: str, token: str) -> Path:
    return target.parent / f".{target.name}.{kind}-{token}"


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _remove(path: Path) -> None:
    mode = os.lstat(path).st_mode
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    elif stat.S_ISREG(mode):
        path.unlink()
    # Anything else (a symlink, a FIFO) under a leftover name is not ours: left alone.


def recover_leftovers(folder: Path) -> None:
    """Finish or undo every interrupted write whose leftovers are in `folder` (see module doc)."""
    if not _is_real_dir(folder):
        return
    leftovers: dict[str, list[tuple[str, Path]]] = {}
    for entry in os.scandir(folder):
        match = _LEFTOVER.fullmatch(entry.name)
        if match is not None:
            leftovers.setdefault(match["target"], []).append((match["kind"], folder / entry.name))
    for target_name, found in leftovers.items():
        target = folder / target_name
        olds = sorted(p for kind, p in found if kind == "old" and _is_real_dir(p))
        if not os.path.lexists(target) and olds:
            os.rename(olds[0], target)
            _fsync_dir(folder)
        for _, leftover in found:
            if os.path.lexists(leftover):
                _remove(leftover)


def atomic_write(path: Path, data: bytes, writer: FileWriter = durable_write) -> None:
    """Replace `path` with `data` atomically (temporary sibling file, then rename)."""
    temporary = _sibling(path, "tmp", uuid.uuid4().hex[:12])
    try:
        writer(temporary, data)
        os.replace(temporary, path)
        _fsync_dir(path.parent)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _fsync_tree(root: Path) -> None:
    for folder, _, _ in os.walk(root):
        _fsync_dir(Path(folder))


def replace_dir(target: Path, build: Callable[[Path], None]) -> None:
    """Build a new folder with `build(temporary)` and swap it in for `target`.

    If `build` raises, the temporary folder is removed and `target` is untouched. A kill at any
    point is repaired by the next `recover_leftovers(target.parent)`.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_leftovers(target.parent)
    token = uuid.uuid4().hex[:12]
    temporary = _sibling(target, "tmp", token)
    temporary.mkdir()
    try:
        build(temporary)
        _fsync_tree(temporary)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if not os.path.lexists(target):
        os.rename(temporary, target)
        _fsync_dir(target.parent)
        return
    old = _sibling(target, "old", token)
    os.rename(target, old)
    try:
        os.rename(temporary, target)
    except BaseException:
        os.rename(old, target)
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    _fsync_dir(target.parent)
    shutil.rmtree(old)
