"""The one read boundary: every file or folder a skill reader touches goes through here.

A reader is given a folder (a skill, a library, a pack, a run folder). Each path inside it is
resolved and must stay inside that folder: a symlink may point elsewhere inside, never out, and
a symlink loop is an error. Only regular files are read, opened with `O_NOFOLLOW|O_NONBLOCK` and
checked with `fstat` before a byte is read, so a FIFO cannot block and a device cannot stream
forever; every read has a size cap. Every failure is a one-line `SkillError` naming the path
(escaped for the terminal) and the problem.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from grse_graph.errors import SkillError

from .limits import MAX_FOLDER_ENTRIES
from .text import shown

EntryKind = Literal["file", "folder"]

_REASONS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ELOOP: "symlink loop",
    errno.ENAMETOOLONG: "path too long",
    errno.ENOENT: "does not exist",
    errno.ENOTDIR: "a file where a folder belongs",
    errno.EISDIR: "a folder where a file belongs",
}


def os_problem(path: Path | str, error: OSError, action: str = "cannot read") -> SkillError:
    """A one-line `SkillError` for an `OSError` on `path`."""
    code = error.errno if error.errno is not None else -1
    reason = _REASONS.get(code) or one_reason(error)
    return SkillError(f"{shown(path)}: {action}: {reason}")


def one_reason(error: OSError) -> str:
    """The OS's text for an error, without the file name it may repeat."""
    return error.strerror.lower() if error.strerror else type(error).__name__


@contextmanager
def reading(path: Path | str, action: str = "cannot read") -> Iterator[None]:
    """Turn any `OSError` (or a recursion blow-up on a pathological path) into one line."""
    try:
        yield
    except OSError as error:
        raise os_problem(path, error, action) from None
    except (RecursionError, RuntimeError) as error:  # `Path.resolve` on loops (Python < 3.13)
        raise SkillError(f"{shown(path)}: {action}: {error}") from None


def _file_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class Boundary:
    """Reads confined to one root folder (resolved once, when the boundary is made)."""

    def __init__(self, root: Path | str, what: str) -> None:
        self.root = Path(root)
        self.what = what
        with reading(self.root):
            self.real_root = Path(os.path.realpath(self.root, strict=True))
            if not stat.S_ISDIR(os.stat(self.real_root).st_mode):
                raise SkillError(f"{shown(self.root)}: not a folder")

    def resolve(self, path: Path) -> Path:
        """The real path of `path`, which must lie inside the root (symlinks followed)."""
        with reading(path):
            # Where the links point, before asking whether it exists (a link out is named so).
            where = Path(os.path.realpath(path))
            if where != self.real_root and not where.is_relative_to(self.real_root):
                raise SkillError(
                    f"{shown(path)}: symlink points outside the {self.what} ({shown(where)})"
                )
            return Path(os.path.realpath(path, strict=True))

    def kind(self, path: Path) -> EntryKind:
        """Whether `path` (inside the root) is a regular file or a folder; anything else,
        a dangling or escaping symlink, a loop or an unreadable entry is a `SkillError`."""
        real = self.resolve(path)
        with reading(path):
            mode = os.stat(real).st_mode
        if stat.S_ISDIR(mode):
            return "folder"
        if stat.S_ISREG(mode):
            return "file"
        raise SkillError(f"{shown(path)}: {_file_type(mode)}, not a regular file")

    def mode(self, path: Path) -> int:
        """The `st_mode` of what `path` (inside the root) resolves to."""
        real = self.resolve(path)
        with reading(path):
            return os.stat(real).st_mode

    def exists(self, path: Path) -> bool:
        """True when anything (even a dangling symlink) is at `path`."""
        return os.path.lexists(path)

    def list(self, folder: Path) -> list[Path]:
        """The entries of a folder inside the root, sorted by name, at most a bounded number."""
        real = self.resolve(folder)
        names: list[str] = []
        with reading(folder, "cannot list the folder"), os.scandir(real) as entries:
            for entry in entries:
                names.append(entry.name)
                if len(names) > MAX_FOLDER_ENTRIES:
                    raise SkillError(f"{shown(folder)}: more than {MAX_FOLDER_ENTRIES} entries")
        return [folder / name for name in sorted(names)]

    def read(self, path: Path, limit: int, what: str) -> bytes:
        """The bytes of a regular file inside the root, at most `limit` of them."""
        real = self.resolve(path)
        with reading(path):
            mode = os.stat(real).st_mode
            if not stat.S_ISREG(mode):
                raise SkillError(f"{shown(path)}: {_file_type(mode)}, not a regular file")
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
            descriptor = os.open(real, flags)
            try:
                info = os.fstat(descriptor)
                if not stat.S_ISREG(info.st_mode):  # swapped after the check above
                    raise SkillError(f"{shown(path)}: {_file_type(info.st_mode)}, not a file")
                if info.st_size > limit:
                    raise SkillError(
                        f"{shown(path)}: {what} is {info.st_size} bytes, over the limit of "
                        f"{limit} bytes"
                    )
                chunks: list[bytes] = []
                remaining = limit + 1
                while remaining > 0:
                    chunk = os.read(descriptor, min(remaining, 1 << 20))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    remaining -= len(chunk)
            finally:
                os.close(descriptor)
        data = b"".join(chunks)
        if len(data) > limit:
            raise SkillError(f"{shown(path)}: {what} is over the limit of {limit} bytes")
        return data


def decode_utf8(data: bytes, path: Path) -> str:
    """Strict UTF-8 decoding with the offending byte offset in the error."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillError(
            f"{shown(path)}: not valid UTF-8 text (bad byte at offset {error.start})"
        ) from None
