"""Crash-safe writes: files renamed into place, folders swapped in with no window.

A file is written to a hidden sibling `.<name>.tmp-<token>` and renamed over the target. A
folder is built completely as `.<name>.tmp-<token>`, then swapped in. On Linux the swap is one
`renameat2(RENAME_EXCHANGE)`: the live name points at the new folder in a single step, the
temporary name then holds the old folder, which is removed; the live folder is never absent.
Where that call is missing or refused (another OS, a filesystem without it) the fallback is two
renames: the live folder to `.<name>.old-<token>`, the new one to `<name>`, the old one removed.
A kill at any point leaves a state `recover_leftovers` (called by every save and by the loading
API) turns back into a complete folder: if `<name>` is missing but `.<name>.old-<token>` exists,
the fallback was cut between its two renames and the old folder is put back; any other leftover
is removed. Only names of exactly this form are ever touched, and never through a symlink.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import re
import shutil
import stat
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

# One implementation of durable files for the whole package; the names stay importable from here.
from grse_graph.durable import FileWriter as FileWriter
from grse_graph.durable import atomic_write as atomic_write
from grse_graph.durable import durable_write as durable_write
from grse_graph.durable import fsync_dir as _fsync_dir

_LEFTOVER = re.compile(r"^\.(?P<target>.+)\.(?P<kind>tmp|old)-(?P<token>[0-9a-f]{12})$")

# Linux ABI constants for renameat2 (<linux/fs.h>, <fcntl.h>, the per-architecture syscall
# tables); glibc before 2.28 and some other libcs have no `renameat2` wrapper.
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}
# The answers that mean "this kernel or filesystem cannot exchange", not "this swap is wrong":
# ENOSYS (no syscall), EINVAL (filesystem without RENAME_EXCHANGE), EOPNOTSUPP (some network
# and FUSE filesystems), EPERM (container seccomp filters that predate the syscall). A genuine
# permission problem fails again, with its own error, in the two-rename fallback.
_EXCHANGE_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM})

Renameat2 = Callable[[bytes, bytes, int], int]
"""`renameat2(AT_FDCWD, old, AT_FDCWD, new, flags)`: 0, or -1 with `ctypes.get_errno()` set."""


def mark_executable(path: Path) -> None:
    """Add the execute bits wherever `path` has read bits (what `chmod +x` does under the
    usual umask): a skill's script stays runnable after save, export and import."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    os.chmod(path, mode | ((mode & 0o444) >> 2))


def is_executable(mode: int) -> bool:
    """True when `mode` (an `st_mode`) lets the file's owner execute it (git's rule)."""
    return stat.S_ISREG(mode) and bool(mode & stat.S_IXUSR)


def is_save_leftover(name: str) -> bool:
    """True for the hidden temporary names `atomic_write` and `replace_dir` create."""
    return _LEFTOVER.fullmatch(name) is not None


def _sibling(target: Path, kind: str, token: str) -> Path:
    return target.parent / f".{target.name}.{kind}-{token}"


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


@functools.cache
def _renameat2() -> Renameat2 | None:
    """libc's `renameat2`, else the raw syscall, else None (not Linux, unknown architecture)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    wrapper = getattr(libc, "renameat2", None)
    if wrapper is not None:
        wrapper.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        wrapper.restype = ctypes.c_int

        def through_wrapper(old: bytes, new: bytes, flags: int) -> int:
            return int(wrapper(_AT_FDCWD, old, _AT_FDCWD, new, flags))

        return through_wrapper
    number = _SYS_RENAMEAT2.get(platform.machine())
    syscall = getattr(libc, "syscall", None)
    if number is None or syscall is None:
        return None
    syscall.restype = ctypes.c_long

    def through_syscall(old: bytes, new: bytes, flags: int) -> int:
        # `syscall` is variadic: every argument is passed with its C type spelled out.
        return int(
            syscall(
                ctypes.c_long(number),
                ctypes.c_int(_AT_FDCWD),
                ctypes.c_char_p(old),
                ctypes.c_int(_AT_FDCWD),
                ctypes.c_char_p(new),
                ctypes.c_uint(flags),
            )
        )

    return through_syscall


def exchange_paths(first: Path, second: Path) -> bool:
    """Swap two existing paths in one atomic step (`renameat2(RENAME_EXCHANGE)`).

    True when swapped; False when this system or filesystem cannot exchange (nothing changed,
    use the two-rename fallback). Any other failure is raised as an `OSError`.
    """
    call = _renameat2()
    if call is None:
        return False
    if call(os.fsencode(first), os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _EXCHANGE_UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


def _fsync_tree(root: Path) -> None:
    for folder, _, _ in os.walk(root):
        _fsync_dir(Path(folder))


def _swap_in(temporary: Path, target: Path) -> bool:
    """Exchange the finished `temporary` with the live `target` and remove the old folder (now
    under the temporary name). False, with nothing changed, when exchanging is unsupported."""
    try:
        exchanged = exchange_paths(temporary, target)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if not exchanged:
        return False
    _fsync_dir(target.parent)
    # A kill during this removal leaves a `.tmp-` leftover next to a complete live folder:
    # the next `recover_leftovers` deletes it.
    _remove_old(temporary)
    return True


def _remove_old(folder: Path) -> None:
    """Delete a replaced folder (its own step so tests can interrupt the cleanup)."""
    shutil.rmtree(folder)


def replace_dir(target: Path, build: Callable[[Path], None]) -> None:
    """Build a new folder with `build(temporary)` and swap it in for `target`.

    If `build` raises, the temporary folder is removed and `target` is untouched. Where the
    exchange works `target` is never absent; elsewhere a kill at any point is repaired by the
    next `recover_leftovers(target.parent)`.
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
    if _swap_in(temporary, target):
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
    _remove_old(old)
