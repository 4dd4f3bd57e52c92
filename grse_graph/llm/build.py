"""Build llama.cpp's ``llama-server`` from the pinned llama-cpp-python sdist into the cache.

`grse engine build` runs `EngineBuilder.build`: download the pinned sdist with pip, check its
sha256, unpack only ``vendor/llama.cpp``, configure it with the machine's CMake and compiler
(static, server only, ``GGML_NATIVE=ON``), compile the ``llama-server`` target and install the
binary atomically into ``CACHE/engines/llama-server-VERSION-CPU/llama-server``.

The binary is compiled for the CPU it is built on (``-march=native``), so its folder carries a
fingerprint of that CPU (architecture and feature flags): a cache shared between different
machines never runs a binary with instructions the CPU lacks. The AMX guard is not a build
option: `grse_graph.llm.childproc` applies it to every engine process at start.

Every outside effect goes through a parameter (`CommandRunner`, ``which``, the CPU description,
the clock), so the logic is tested with fakes.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from grse_graph.errors import EngineError

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
SDIST_NAME = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
"""sha256 of the PyPI sdist of llama-cpp-python 0.3.36 (computed from the downloaded file)."""

BINARY_NAME = "llama-server"
_VENDOR_PREFIX = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}/vendor/llama.cpp/"
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_OPENSSL=OFF",
    # Code for the CPU it is built on; the folder name carries the CPU fingerprint.
    "-DGGML_NATIVE=ON",
)
CMAKE_HINT = "install CMake: pip install 'grse-graph[build]' (or apt-get install cmake)"
COMPILER_HINT = "install a C/C++ compiler: apt-get install build-essential (or gcc g++)"
_C_COMPILERS = ("cc", "gcc", "clang")
_CXX_COMPILERS = ("c++", "g++", "clang++")
_PERCENT = re.compile(r"^\[\s*(\d+)%\]")
_LOG_TAIL_LINES = 6


class CommandRunner(Protocol):
    """Runs one build command; raises `EngineError` when it fails."""

    def __call__(self, command: Sequence[str], *, cwd: Path, log_path: Path) -> None: ...


class BuildTools(BaseModel):
    """The CMake and compilers a build uses."""

    model_config = ConfigDict(frozen=True)

    cmake: str
    c_compiler: str
    cxx_compiler: str


class BuildRecord(BaseModel):
    """What was built, written next to the binary as ``build.json``."""

    model_config = ConfigDict(frozen=True)

    llama_cpp_python_version: str
    sdist_sha256: str
    cpu_fingerprint: str
    cmake_options: list[str]
    build_seconds: float
    binary: Path


class BuildResult(BaseModel):
    """Where the binary is and whether this call built it."""

    model_config = ConfigDict(frozen=True)

    binary: Path
    built: bool
    seconds: float


def cpu_fingerprint(cpuinfo: str, machine: str) -> str:
    """12 hex digits naming the CPU features a native build depends on (architecture, flags)."""
    flags = ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags = " ".join(sorted(value.split()))
            break
    return hashlib.sha256(f"{machine}\n{flags}".encode()).hexdigest()[:12]


def read_cpuinfo() -> str:
    """The text of /proc/cpuinfo ('' where there is none)."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def local_cpu_fingerprint() -> str:
    """The fingerprint of this machine's CPU."""
    return cpu_fingerprint(read_cpuinfo(), platform.machine())


def engine_dir(cache_dir: Path, fingerprint: str) -> Path:
    """The cache folder of the llama-server built for one CPU."""
    return cache_dir / "engines" / f"{BINARY_NAME}-{LLAMA_CPP_PYTHON_VERSION}-{fingerprint}"


def built_llama_server(cache_dir: Path, fingerprint: str) -> Path | None:
    """The cached llama-server for this CPU, if it was built and is executable."""
    binary = engine_dir(cache_dir, fingerprint) / BINARY_NAME
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def find_build_tools(which: Callable[[str], str | None] = shutil.which) -> BuildTools:
    """CMake and a C and C++ compiler; a one-line `EngineError` naming what to install."""
    cmake = which("cmake")
    if cmake is None:
        raise EngineError(f"cannot build llama-server: cmake not found; {CMAKE_HINT}")
    c_compiler = next((found for name in _C_COMPILERS if (found := which(name))), None)
    cxx_compiler = next((found for name in _CXX_COMPILERS if (found := which(name))), None)
    if c_compiler is None or cxx_compiler is None:
        missing = "C" if c_compiler is None else "C++"
        raise EngineError(
            f"cannot build llama-server: no {missing} compiler found; {COMPILER_HINT}"
        )
    return BuildTools(cmake=cmake, c_compiler=c_compiler, cxx_compiler=cxx_compiler)


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack_vendored_llama_cpp(sdist: Path, destination: Path) -> Path:
    """Extract only ``vendor/llama.cpp`` of the sdist into ``destination``; its root."""
    with tarfile.open(sdist, "r:gz") as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(_VENDOR_PREFIX)]
        if not members:
            raise EngineError(f"{sdist.name} has no {_VENDOR_PREFIX}")
        archive.extractall(destination, members=members, filter="data")
    return destination / _VENDOR_PREFIX.rstrip("/")


def download_command(destination: Path) -> list[str]:
    """pip's command that fetches the pinned sdist (never a wheel) into ``destination``."""
    return [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
        f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", "-d", str(destination),
    ]  # fmt: skip


def configure_command(tools: BuildTools, source: Path, build: Path) -> list[str]:
    """The CMake configure command (GUIDE §5 options, the found compilers)."""
    return [
        tools.cmake, "-S", str(source), "-B", str(build), *CMAKE_OPTIONS,
        f"-DCMAKE_C_COMPILER={tools.c_compiler}",
        f"-DCMAKE_CXX_COMPILER={tools.cxx_compiler}",
    ]  # fmt: skip


def compile_command(tools: BuildTools, build: Path, jobs: int) -> list[str]:
    """The CMake command that compiles only the ``llama-server`` target."""
    return [tools.cmake, "--build", str(build), "--target", BINARY_NAME, f"-j{jobs}"]


def log_tail(log_path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """The last lines of a build log joined with `` | ``."""
    if not log_path.exists():
        return "(no log)"
    text = log_path.read_text(encoding="utf-8", errors="replace")
    tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(tail) or "(empty log)"


class SubprocessRunner:
    """Runs build commands, appending their output to the build log and reporting CMake's
    ``[ NN%]`` progress every ``step`` percent through ``progress``."""

    def __init__(self, progress: Callable[[str], None], step: int = 10) -> None:
        self._progress = progress
        self._step = step

    def __call__(self, command: Sequence[str], *, cwd: Path, log_path: Path) -> None:
        reported = -self._step
        with log_path.open("a", encoding="utf-8") as log:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            try:
                process = subprocess.Popen(
                    list(command),
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    errors="replace",
                )
            except OSError as error:
                raise EngineError(f"cannot run {command[0]}: {error}") from error
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                match = _PERCENT.match(line)
                if match and int(match.group(1)) >= reported + self._step:
                    reported = int(match.group(1))
                    self._progress(f"  {reported}%")
            code = process.wait()
        if code != 0:
            raise EngineError(
                f"{Path(command[0]).name} failed with code {code}; log {log_path}: "
                f"{log_tail(log_path)}"
            )


class EngineBuilder:
    """Builds (or finds) the cached llama-server for this CPU.

    ``progress`` receives one line per stage with the elapsed time; ``runner`` runs pip and
    CMake; ``which`` finds the tools; ``fingerprint`` names the CPU; ``clock`` measures time;
    ``expected_sha256`` is the pinned sdist hash.
    """

    def __init__(
        self,
        cache_dir: Path,
        *,
        progress: Callable[[str], None],
        runner: CommandRunner | None = None,
        which: Callable[[str], str | None] = shutil.which,
        fingerprint: str | None = None,
        jobs: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        expected_sha256: str = SDIST_SHA256,
    ) -> None:
        self.cache_dir = cache_dir
        self._expected_sha256 = expected_sha256
        self._progress = progress
        self._runner: CommandRunner = runner or SubprocessRunner(progress)
        self._which = which
        self.fingerprint = fingerprint or local_cpu_fingerprint()
        self._jobs = jobs or os.cpu_count() or 1
        self._clock = clock

    @property
    def binary_path(self) -> Path:
        """Where the binary is (or will be) installed."""
        return engine_dir(self.cache_dir, self.fingerprint) / BINARY_NAME

    @property
    def log_path(self) -> Path:
        """The build log (kept after the build, also when it fails)."""
        return self.cache_dir / "engines" / f"build-{BINARY_NAME}-{LLAMA_CPP_PYTHON_VERSION}.log"

    def existing(self) -> Path | None:
        """The already built binary for this CPU, if any."""
        return built_llama_server(self.cache_dir, self.fingerprint)

    def build(self, *, force: bool = False) -> BuildResult:
        """Return the cached binary at once, or build and install it (``force``: rebuild)."""
        start = self._clock()
        found = None if force else self.existing()
        if found is not None:
            return BuildResult(binary=found, built=False, seconds=self._clock() - start)
        tools = find_build_tools(self._which)
        engines = self.cache_dir / "engines"
        engines.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("", encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix=".build-", dir=engines) as scratch:
            work = Path(scratch)
            sdist = self._download(work, start)
            self._stage("verify", start)
            actual = sha256_of(sdist)
            if actual != self._expected_sha256:
                raise EngineError(
                    f"{sdist.name}: sha256 {actual} does not match the pinned "
                    f"{self._expected_sha256}"
                )
            self._stage("unpack vendor/llama.cpp", start)
            source = unpack_vendored_llama_cpp(sdist, work / "src")
            build = work / "build"
            self._stage("configure (cmake)", start)
            self._runner(configure_command(tools, source, build), cwd=work, log_path=self.log_path)
            self._stage(f"compile {BINARY_NAME} ({self._jobs} jobs)", start)
            self._runner(
                compile_command(tools, build, self._jobs), cwd=work, log_path=self.log_path
            )
            self._stage("install", start)
            binary = self._install(build / "bin" / BINARY_NAME, self._clock() - start)
        seconds = self._clock() - start
        self._progress(f"built {binary} in {_minutes(seconds)}")
        return BuildResult(binary=binary, built=True, seconds=seconds)

    def _download(self, work: Path, start: float) -> Path:
        self._stage(f"download llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} sdist (pip)", start)
        downloads = work / "download"
        downloads.mkdir()
        self._runner(download_command(downloads), cwd=work, log_path=self.log_path)
        sdist = downloads / SDIST_NAME
        if not sdist.is_file():
            raise EngineError(f"pip download did not produce {SDIST_NAME}; log {self.log_path}")
        return sdist

    def _install(self, compiled: Path, seconds: float) -> Path:
        if not compiled.is_file():
            raise EngineError(f"the build produced no {compiled}; log {self.log_path}")
        target = self.binary_path
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{BINARY_NAME}.{os.getpid()}.tmp")
        shutil.copyfile(compiled, staging)
        staging.chmod(0o755)
        record = BuildRecord(
            llama_cpp_python_version=LLAMA_CPP_PYTHON_VERSION,
            sdist_sha256=SDIST_SHA256,
            cpu_fingerprint=self.fingerprint,
            cmake_options=list(CMAKE_OPTIONS),
            build_seconds=seconds,
            binary=target,
        )
        (target.parent / "build.json").write_text(record.model_dump_json(indent=2), "utf-8")
        # Atomic: a concurrent reader sees either no binary or the complete one.
        os.replace(staging, target)
        return target

    def _stage(self, name: str, start: float) -> None:
        self._progress(f"[{_minutes(self._clock() - start)}] {name}")


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def build_if_missing(
    cache_dir: Path, progress: Callable[[str], None], fingerprint: str | None = None
) -> Path:
    """The cached llama-server, built first (with a message and progress) when missing."""
    builder = EngineBuilder(cache_dir, progress=progress, fingerprint=fingerprint)
    found = builder.existing()
    if found is not None:
        return found
    progress(
        f"llama-server is not built yet: building it once from llama-cpp-python "
        f"{LLAMA_CPP_PYTHON_VERSION}'s vendored llama.cpp (about 6-12 minutes on 2 cores)"
    )
    return builder.build().binary


def cached_llama_server(cache_dir: Path) -> Path | None:
    """The llama-server `grse engine build` installed for this machine's CPU, if any."""
    return built_llama_server(cache_dir, local_cpu_fingerprint())
