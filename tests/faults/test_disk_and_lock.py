"""A full disk, a read-only run folder and a second process on the same run folder each stop
`grse train` with one clear line (exit 1), not a traceback."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer, Fault, Match
from tests.faults.harness import TRAIN_FLAGS, finish, run_grse, start_grse

pytestmark = pytest.mark.faults

ONE_ITERATION = (*TRAIN_FLAGS, "--iterations", "1")
SMALL_DISK_BYTES = 96 * 1024


def _mount_tmpfs(folder: Path, size: int) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    return result.returncode == 0


@contextmanager
def small_disk(folder: Path) -> Iterator[Callable[[], None] | None]:
    """A folder on a disk of `SMALL_DISK_BYTES`: a tmpfs where we may mount one, else a file
    size limit for the child (then the preexec function to pass is yielded)."""
    if _mount_tmpfs(folder, SMALL_DISK_BYTES):
        try:
            yield None
        finally:
            subprocess.run(["umount", "-l", str(folder)], check=False)
        return

    def limit_file_size() -> None:
        # Without the signal ignored the kernel kills the writer (SIGXFSZ) instead of EFBIG.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (SMALL_DISK_BYTES, SMALL_DISK_BYTES))

    yield limit_file_size


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` read-only: a read-only tmpfs as root (root ignores permissions), else mode 555."""
    if _mount_tmpfs(folder, 1024 * 1024):
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        try:
            yield
        finally:
            subprocess.run(["umount", "-l", str(folder)], check=False)
        return
    if os.geteuid() == 0:
        pytest.skip("root without permission to mount: a read-only folder cannot be made")
    folder.chmod(0o555)
    try:
        yield
    finally:
        folder.chmod(0o755)


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr[-3000:]
    assert "Traceback" not in stderr
    return lines[0]


def test_a_full_disk_stops_the_run_with_one_line(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    with FakeOpenAIServer() as server, small_disk(disk) as preexec:
        done = run_grse(
            ["train", *ONE_ITERATION, "--out", str(disk / "run")],
            server.env(),
            cwd=tmp_path,
            preexec_fn=preexec,
        )
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert line.startswith(f"error: {disk / 'run'}: cannot write the run folder: ")
    assert "the disk is full" in line or "exceeds the allowed file size" in line


def test_a_read_only_run_folder_stops_the_run_with_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "readonly"
    with FakeOpenAIServer() as server, read_only(folder):
        done = run_grse(
            ["train", *ONE_ITERATION, "--out", str(folder / "run")], server.env(), cwd=tmp_path
        )
        requests = len(server.records)
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert line.startswith(f"error: {folder / 'run'}: cannot write the run folder: ")
    assert "read-only" in line or "permission denied" in line
    assert requests == 0  # refused before any model call


def test_a_second_process_on_the_same_run_folder_is_stopped_by_the_lock(tmp_path: Path) -> None:
    # The first run hangs on its first model call, holding the run folder.
    faults = [Fault("hang", Match(role="actor"), first=1)]
    with FakeOpenAIServer(faults=faults, hang_s=60.0) as server:
        env = server.env(timeout_s=60.0, max_retries=0)
        first_started = time.perf_counter()
        first = start_grse(["train", *ONE_ITERATION, "--out", "run"], env, cwd=tmp_path)
        try:
            deadline = time.monotonic() + 60
            while not server.records and time.monotonic() < deadline and first.poll() is None:
                time.sleep(0.05)
            assert server.records, "the first run never reached its first model call"
            started = time.perf_counter()
            others = [
                start_grse(["train", "--resume", "run"], env, cwd=tmp_path),
                start_grse(["train", *ONE_ITERATION, "--out", "run"], env, cwd=tmp_path),
            ]
            second, same_out = (finish(other, started) for other in others)
        finally:
            first.kill()
            finish(first, first_started)
    for done in (second, same_out):
        assert done.returncode == 1
        line = _one_error_line(done.stderr)
        assert line == (
            f"error: run: process {first.pid} is already running on this run folder "
            "(wait for it to finish or stop it first)"
        )
    assert len(server.records) == 1  # neither second process made a model call
