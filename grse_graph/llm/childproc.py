"""Child servers (the engine, the router): started, awaited and stopped, and prepared between
fork and exec (Linux only): ``PR_SET_PDEATHSIG`` so the child dies with the *thread* that forked
it, even by SIGKILL (no orphan keeps the port and the memory); optionally a seccomp filter that
refuses ``arch_prctl(ARCH_REQ_XCOMP_PERM)``: some virtual machines grant ggml's AMX tile
permission but fault on the first tile instruction (SIGILL in ``ggml_backend_amx_mul_mat``,
measured here); refused, ggml falls back to its AVX-512/AVX2 kernels.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import signal
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import IO, Self

import httpx

from grse_graph.errors import EngineError

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_AUDIT_ARCH_X86_64 = 0xC000003E
_NR_ARCH_PRCTL = 158
_ARCH_REQ_XCOMP_PERM = 0x1023
_EPERM = 1
_SECCOMP_RET_ERRNO = 0x00050000
_SECCOMP_RET_ALLOW = 0x7FFF0000
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_RET_K = 0x06

# Exit codes of the child when a setting cannot be applied (visible in the engine error).
EXIT_PARENT_GONE = 70
EXIT_SECCOMP_FAILED = 71


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _amx_refusal_program() -> list[tuple[int, int, int, int]]:
    """BPF: on x86-64, arch_prctl(ARCH_REQ_XCOMP_PERM, ...) -> EPERM; everything else allowed."""
    return [
        (_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 0, 5, _AUDIT_ARCH_X86_64),
        (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (_JEQ_K, 0, 3, _NR_ARCH_PRCTL),
        (_LD_W_ABS, 0, 0, 16),  # low 32 bits of args[0]
        (_JEQ_K, 0, 1, _ARCH_REQ_XCOMP_PERM),
        (_RET_K, 0, 0, _SECCOMP_RET_ERRNO | _EPERM),
        (_RET_K, 0, 0, _SECCOMP_RET_ALLOW),
    ]


def amx_guard_supported() -> bool:
    """True where the AMX refusal filter can be installed (Linux on x86-64)."""
    return sys.platform.startswith("linux") and platform.machine() in {"x86_64", "AMD64"}


def child_preparation(parent_pid: int, *, refuse_amx: bool) -> Callable[[], None]:
    """A ``preexec_fn`` applying PR_SET_PDEATHSIG and, if asked, the AMX refusal filter."""
    program = _amx_refusal_program()

    def prepare() -> None:
        if not sys.platform.startswith("linux"):
            return
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died between fork and prctl; then no signal would ever come.
        if os.getppid() != parent_pid:
            os._exit(EXIT_PARENT_GONE)
        if refuse_amx and amx_guard_supported():
            filters = (_SockFilter * len(program))(*(_SockFilter(*row) for row in program))
            fprog = _SockFprog(len(program), filters)
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                os._exit(EXIT_SECCOMP_FAILED)
            if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
                os._exit(EXIT_SECCOMP_FAILED)

    return prepare


def start_child(command: list[str], log: IO[bytes], *, refuse_amx: bool) -> subprocess.Popen[bytes]:
    """Start ``command`` with its output in ``log``, prepared by `child_preparation`."""
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        # Own session: a terminal's Ctrl-C reaches only us, and we stop the child.
        start_new_session=True,
        preexec_fn=child_preparation(os.getpid(), refuse_amx=refuse_amx),
    )


def wait_until_answering(
    url: str,
    process: subprocess.Popen[bytes],
    timeout_s: float,
    failure: Callable[[int | None], EngineError],
) -> None:
    """Poll ``url`` until it answers 200; raise ``failure(exit code)`` if ``process`` exits first,
    ``failure(None)`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while True:
            code = process.poll()
            if code is not None:
                raise failure(code)
            with contextlib.suppress(httpx.HTTPError):
                if client.get(url).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise failure(None)
            time.sleep(0.25)


def stop_child(process: subprocess.Popen[bytes] | None, timeout_s: float = 10.0) -> None:
    """SIGTERM, wait, then SIGKILL."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)


class Started(ABC):
    """A child server `with` starts on entry and stops on exit, whatever happened inside (left
    running, it would hold its port and the CPU after the command)."""

    @abstractmethod
    def start(self) -> Self:
        """Start the server and return it."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server. Safe to call twice."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
