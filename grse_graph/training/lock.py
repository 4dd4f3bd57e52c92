"""One process per run folder, and one clear line when the run folder cannot be written.

`guard_run_folder` wraps `run_training`: it takes an exclusive ``flock`` on ``RUN/.grse.lock``
for the whole run (the kernel releases it when the process dies, even by SIGKILL, so a killed
run can be resumed at once) and turns the disk failures a long unattended run meets (disk or
quota full, read-only file system, file size limit, no permission) into `RunFolderWriteError`,
one line naming the run folder and the cause, instead of a traceback from deep inside a node,
the checkpointer or a plot.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import sqlite3
import warnings
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from grse_graph.jsonl import RunFolderError

LOCK_NAME = ".grse.lock"

_DISK_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EFBIG: "a file exceeds the allowed file size",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}
_SQLITE_MESSAGES = {
    "database or disk is full": "the disk is full",
    "attempt to write a readonly database": "the file system is read-only",
    "unable to open database file": "the checkpoint database cannot be opened",
    "disk i/o error": "a disk I/O error occurred",
}


class RunFolderLockedError(RunFolderError):
    """Another process holds the run folder."""


class RunFolderWriteError(RunFolderError):
    """The run folder cannot be written (full, read-only, no permission)."""


def disk_problem(error: BaseException) -> str | None:
    """The one-line cause of a disk failure, or None when `error` is something else."""
    if isinstance(error, OSError) and error.errno in _DISK_ERRNOS:
        where = f" ({error.filename})" if error.filename else ""
        return f"{_DISK_ERRNOS[error.errno]}{where}"
    if isinstance(error, sqlite3.OperationalError):
        text = str(error).lower()
        for needle, cause in _SQLITE_MESSAGES.items():
            if needle in text:
                return f"{cause} (checkpoints.sqlite: {error})"
    return None


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"
    return f"process {text}" if text.isdigit() else "another process"


@contextmanager
def run_folder_lock(run_path: Path) -> Iterator[None]:
    """Hold the exclusive lock of a run folder (created if needed) for the block."""
    lock_path = run_path / LOCK_NAME
    try:
        run_path.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        cause = disk_problem(error) or error.strerror or str(error)
        raise RunFolderWriteError(f"{run_path}: cannot write the run folder: {cause}") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderLockedError(
                f"{run_path}: {_holder(lock_path)} is already running on this run folder "
                "(wait for it to finish or stop it first)"
            ) from None
        try:
            os.ftruncate(descriptor, 0)
            os.write(descriptor, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # the pid is only shown to a second process; a full disk must not stop us here
        yield
    finally:
        os.close(descriptor)


P = ParamSpec("P")
T = TypeVar("T")


def guard_run_folder(
    function: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Decorate ``async def f(deps, ...)`` (``deps.run.path`` is the run folder): run it under
    `run_folder_lock` and report disk failures as one-line `RunFolderWriteError`."""

    @functools.wraps(function)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
        run_path = Path(args[0].run.path)  # type: ignore[attr-defined]
        if kwargs.get("resume") and not run_path.is_dir():
            return await function(*args, **kwargs)  # it reports the missing run itself
        try:
            with run_folder_lock(run_path), warnings.catch_warnings():
                _quiet_abandoned_tasks()
                return await function(*args, **kwargs)
        except (OSError, sqlite3.OperationalError) as error:
            _quiet_abandoned_tasks()
            cause = disk_problem(error)
            if cause is None:
                raise
            raise RunFolderWriteError(f"{run_path}: cannot write the run folder: {cause}") from None
        except BaseException:
            _quiet_abandoned_tasks()
            raise

    return guarded


def _quiet_abandoned_tasks() -> None:
    # A run that fails for good leaves LangGraph tasks it never started (Send units, checkpoint
    # writes); they are dropped unawaited while the error propagates and again when the event
    # loop closes (after the run has returned), and Python's warnings about them would follow
    # the one-line error. So: during the run, and for the rest of the process after a failure.
    warnings.filterwarnings("ignore", "coroutine '.*' was never awaited", RuntimeWarning)
