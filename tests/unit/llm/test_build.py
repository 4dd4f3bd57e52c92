"""`grse engine build` logic with fakes: commands, sha check, missing tools, cache lookup."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.errors import EngineError
from grse_graph.llm import build as build_module
from grse_graph.llm.build import (
    BINARY_NAME,
    CMAKE_OPTIONS,
    LLAMA_CPP_PYTHON_VERSION,
    SDIST_NAME,
    SDIST_SHA256,
    BuildRecord,
    EngineBuilder,
    SubprocessRunner,
    built_llama_server,
    cpu_fingerprint,
    engine_dir,
    find_build_tools,
    sha256_of,
    unpack_vendored_llama_cpp,
)

TOOLS = {"cmake": "/usr/bin/cmake", "cc": "/usr/bin/cc", "c++": "/usr/bin/c++"}
PREFIX = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}"


def _which(available: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda name: available.get(name)


def _sdist(path: Path) -> Path:
    """A small tarball shaped like the llama-cpp-python sdist."""
    files = {
        f"{PREFIX}/vendor/llama.cpp/CMakeLists.txt": b"project(llama)\n",
        f"{PREFIX}/vendor/llama.cpp/tools/server/server.cpp": b"int main(){}\n",
        f"{PREFIX}/llama_cpp/__init__.py": b"# not needed for the build\n",
    }
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


class FakeRunner:
    """Records commands; 'pip download' writes the fake sdist, 'cmake --build' the binary."""

    def __init__(self, sdist: Path, fail_on: str | None = None) -> None:
        self.sdist = sdist
        self.fail_on = fail_on
        self.commands: list[list[str]] = []

    def __call__(self, command: Sequence[str], *, cwd: Path, log_path: Path) -> None:
        self.commands.append(list(command))
        if self.fail_on is not None and self.fail_on in command:
            raise EngineError(f"{self.fail_on} failed")
        if "download" in command:
            destination = Path(command[command.index("-d") + 1])
            (destination / SDIST_NAME).write_bytes(self.sdist.read_bytes())
        elif "--build" in command:
            build = Path(command[command.index("--build") + 1])
            (build / "bin").mkdir(parents=True)
            (build / "bin" / BINARY_NAME).write_bytes(b"#!/bin/sh\necho fake\n")


class FakeClock:
    def __init__(self, step: float = 30.0) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _builder(
    tmp_path: Path,
    runner: FakeRunner,
    lines: list[str],
    which: dict[str, str] | None = None,
    sha256: str | None = None,
) -> EngineBuilder:
    """A builder whose pinned hash is the fake sdist's (``sha256`` None) or the given one."""
    return EngineBuilder(
        tmp_path / "cache",
        expected_sha256=sha256 or sha256_of(runner.sdist),
        progress=lines.append,
        runner=runner,
        which=_which(TOOLS if which is None else which),
        fingerprint="cpu123",
        jobs=2,
        clock=FakeClock(),
    )


@pytest.fixture()
def pinned_sdist(tmp_path: Path) -> Path:
    """The fake sdist (the builders below pin its hash)."""
    return _sdist(tmp_path / SDIST_NAME)


def test_build_runs_pip_cmake_and_installs_the_binary(tmp_path: Path, pinned_sdist: Path) -> None:
    runner = FakeRunner(pinned_sdist)
    lines: list[str] = []
    builder = _builder(tmp_path, runner, lines)
    result = builder.build()

    download, configure, compile_ = runner.commands
    assert download[1:4] == ["-m", "pip", "download"]
    assert download[4:7] == ["--no-deps", "--no-binary", ":all:"]
    assert f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}" in download
    assert configure[0] == "/usr/bin/cmake" and configure[1] == "-S"
    assert Path(configure[2]).name == "llama.cpp" and (Path(configure[2]).parent.name == "vendor")
    assert set(CMAKE_OPTIONS) <= set(configure)
    assert "-DGGML_NATIVE=ON" in configure and "-DBUILD_SHARED_LIBS=OFF" in configure
    assert "-DCMAKE_CXX_COMPILER=/usr/bin/c++" in configure
    assert compile_[1:] == ["--build", compile_[2], "--target", "llama-server", "-j2"]

    expected = tmp_path / "cache" / "engines" / "llama-server-0.3.36-cpu123" / "llama-server"
    assert result.built and result.binary == expected
    assert os.access(expected, os.X_OK)
    record = BuildRecord.model_validate_json((expected.parent / "build.json").read_text())
    assert record.cpu_fingerprint == "cpu123" and record.binary == expected
    stages = [line for line in lines if line.startswith("[")]
    assert [stage.split("] ", 1)[1].split(" ")[0] for stage in stages] == [
        "download", "verify", "unpack", "configure", "compile", "install",
    ]  # fmt: skip
    assert lines[-1].startswith(f"built {expected} in ")
    # The scratch folder (sources, objects) is gone; only the engine folder and the log stay.
    assert sorted(p.name for p in (tmp_path / "cache" / "engines").iterdir()) == [
        "build-llama-server-0.3.36.log",
        "llama-server-0.3.36-cpu123",
    ]


def test_second_build_returns_the_cached_binary_without_commands(
    tmp_path: Path, pinned_sdist: Path
) -> None:
    first = _builder(tmp_path, FakeRunner(pinned_sdist), []).build()
    runner = FakeRunner(pinned_sdist)
    again = _builder(tmp_path, runner, []).build()
    assert not again.built and again.binary == first.binary
    assert runner.commands == []


def test_force_rebuilds(tmp_path: Path, pinned_sdist: Path) -> None:
    _builder(tmp_path, FakeRunner(pinned_sdist), []).build()
    runner = FakeRunner(pinned_sdist)
    result = _builder(tmp_path, runner, []).build(force=True)
    assert result.built and len(runner.commands) == 3


def test_sha_mismatch_is_one_line_error_and_installs_nothing(
    tmp_path: Path, pinned_sdist: Path
) -> None:
    runner = FakeRunner(pinned_sdist)
    builder = _builder(tmp_path, runner, [], sha256=SDIST_SHA256)
    with pytest.raises(EngineError, match="does not match the pinned") as raised:
        builder.build()
    assert "\n" not in str(raised.value)
    assert len(runner.commands) == 1  # download only: nothing configured or compiled
    assert builder.existing() is None


@pytest.mark.parametrize(
    ("available", "message"),
    [
        ({"cc": "/usr/bin/cc", "c++": "/usr/bin/c++"}, "cmake not found; install CMake"),
        ({"cmake": "/usr/bin/cmake", "c++": "/usr/bin/c++"}, "no C compiler found"),
        ({"cmake": "/usr/bin/cmake", "gcc": "/usr/bin/gcc"}, "no C\\+\\+ compiler found"),
    ],
)
def test_missing_tools_name_what_to_install(
    tmp_path: Path, pinned_sdist: Path, available: dict[str, str], message: str
) -> None:
    runner = FakeRunner(pinned_sdist)
    with pytest.raises(EngineError, match=message) as raised:
        _builder(tmp_path, runner, [], which=available).build()
    assert "install" in str(raised.value) and "\n" not in str(raised.value)
    assert runner.commands == []


def test_find_build_tools_takes_the_first_compiler_found() -> None:
    tools = find_build_tools(_which({"cmake": "/c", "gcc": "/gcc", "clang++": "/clang++"}))
    assert (tools.cmake, tools.c_compiler, tools.cxx_compiler) == ("/c", "/gcc", "/clang++")


def test_failed_compile_leaves_no_binary(tmp_path: Path, pinned_sdist: Path) -> None:
    builder = _builder(tmp_path, FakeRunner(pinned_sdist, fail_on="--build"), [])
    with pytest.raises(EngineError, match="--build failed"):
        builder.build()
    assert builder.existing() is None
    assert [p.name for p in (tmp_path / "cache" / "engines").iterdir()] == [
        "build-llama-server-0.3.36.log"
    ]


def test_unpack_extracts_only_vendored_llama_cpp(tmp_path: Path, pinned_sdist: Path) -> None:
    root = unpack_vendored_llama_cpp(pinned_sdist, tmp_path / "src")
    assert (root / "tools" / "server" / "server.cpp").is_file()
    assert not (tmp_path / "src" / PREFIX / "llama_cpp").exists()


def test_unpack_rejects_an_archive_without_llama_cpp(tmp_path: Path) -> None:
    archive_path = tmp_path / "empty.tar.gz"
    with tarfile.open(archive_path, "w:gz"):
        pass
    with pytest.raises(EngineError, match="has no"):
        unpack_vendored_llama_cpp(archive_path, tmp_path / "src")


def test_cache_lookup_needs_an_executable_for_this_cpu(tmp_path: Path) -> None:
    assert built_llama_server(tmp_path, "cpuA") is None
    binary = engine_dir(tmp_path, "cpuA") / BINARY_NAME
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"")
    assert built_llama_server(tmp_path, "cpuA") is None  # not executable
    binary.chmod(0o755)
    assert built_llama_server(tmp_path, "cpuA") == binary
    assert built_llama_server(tmp_path, "cpuB") is None


def test_cpu_fingerprint_depends_on_flags_and_architecture() -> None:
    info = "processor\t: 0\nflags\t\t: sse avx2 fma\n\nprocessor\t: 1\nflags\t\t: sse avx2 fma\n"
    same = "flags\t\t: fma avx2 sse\n"
    assert cpu_fingerprint(info, "x86_64") == cpu_fingerprint(same, "x86_64")
    assert cpu_fingerprint(info, "x86_64") != cpu_fingerprint("flags : sse avx2", "x86_64")
    assert cpu_fingerprint(info, "x86_64") != cpu_fingerprint(info, "aarch64")
    assert len(cpu_fingerprint("", "x86_64")) == 12


def test_subprocess_runner_logs_output_and_reports_percent(tmp_path: Path) -> None:
    lines: list[str] = []
    log = tmp_path / "build.log"
    script = 'for p in 1 5 12 30 31 100; do echo "[ $p%] Building"; done'
    SubprocessRunner(lines.append)(["sh", "-c", script], cwd=tmp_path, log_path=log)
    assert lines == ["  1%", "  12%", "  30%", "  100%"]
    assert "[ 31%] Building" in log.read_text()


def test_subprocess_runner_failure_names_code_and_log(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    with pytest.raises(EngineError, match=r"sh failed with code 3; log .*build.log: .* \| oops$"):
        SubprocessRunner(lambda line: None)(
            ["sh", "-c", "echo oops; exit 3"], cwd=tmp_path, log_path=log
        )


def test_cli_engine_path_and_status_without_a_build(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"GRSE_CACHE_DIR": str(tmp_path)}
    result = runner.invoke(build_app(), ["engine", "path"], env=env)
    assert result.exit_code == 1
    assert "llama-server not built: run grse engine build" in str(result.exception)
    status = runner.invoke(build_app(), ["engine", "status"], env=env)
    assert status.exit_code == 0, status.output
    assert "not built" in status.output and str(tmp_path / "engines") in status.output


def test_cli_engine_build_finds_an_existing_binary(tmp_path: Path) -> None:
    binary = engine_dir(tmp_path, build_module.local_cpu_fingerprint()) / BINARY_NAME
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"")
    binary.chmod(0o755)
    env = {"GRSE_CACHE_DIR": str(tmp_path)}
    result = CliRunner().invoke(build_app(), ["engine", "build"], env=env)
    assert result.exit_code == 0, result.output
    assert f"already built: {binary}" in result.output
    path = CliRunner().invoke(build_app(), ["engine", "path"], env=env)
    assert path.output.strip() == str(binary)
