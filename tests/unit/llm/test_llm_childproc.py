"""The engine child's kernel settings: AMX permission refused, parent-death signal set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grse_graph.llm.childproc import amx_guard_supported, child_preparation

PROBE = """
import ctypes, ctypes.util
libc = ctypes.CDLL(None, use_errno=True)
result = libc.syscall(158, 0x1023, 18)  # arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)
errno = ctypes.get_errno() if result != 0 else 0
signal_number = ctypes.c_int()
libc.prctl(2, ctypes.byref(signal_number), 0, 0, 0)  # PR_GET_PDEATHSIG
print(errno, signal_number.value)
"""


def _probe(refuse_amx: bool) -> tuple[int, int]:
    output = subprocess.run(
        [sys.executable, "-c", PROBE],
        preexec_fn=child_preparation(os.getpid(), refuse_amx=refuse_amx),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(output[0]), int(output[1])


@pytest.mark.skipif(not amx_guard_supported(), reason="Linux x86-64 only")
def test_amx_permission_is_refused_and_death_signal_set() -> None:
    errno, death_signal = _probe(refuse_amx=True)
    assert errno == 1  # EPERM from the seccomp filter
    assert death_signal == 9  # SIGKILL


@pytest.mark.skipif(not amx_guard_supported(), reason="Linux x86-64 only")
def test_without_the_guard_the_call_is_not_filtered() -> None:
    errno, death_signal = _probe(refuse_amx=False)
    assert errno != 1
    assert death_signal == 9
