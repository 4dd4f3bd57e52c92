"""Where llama-server comes from (configured path > cache build > PATH), build on first use,
and the start flags of both engines (no process is started)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from grse_graph.errors import EngineError
from grse_graph.llm.config import EngineSettings, load_config
from grse_graph.llm.engine import (
    EngineChoice,
    build_engine_command,
    choose_engine,
    ensure_engine,
    find_llama_server,
    parse_prompt_eval_stats,
)

ON_PATH = "/usr/local/bin/llama-server"


def _settings(tmp_path: Path, **values: object) -> EngineSettings:
    return EngineSettings(cache_dir=tmp_path, **values)  # type: ignore[arg-type]


def _path_has_server(name: str) -> str | None:
    return ON_PATH if name == "llama-server" else None


def _nothing_on_path(name: str) -> str | None:
    return None


def _executable(tmp_path: Path, name: str) -> Path:
    binary = tmp_path / name
    binary.write_bytes(b"")
    binary.chmod(0o755)
    return binary


def _cache_with(binary: Path | None) -> Callable[[Path], Path | None]:
    return lambda cache_dir: binary


def test_cache_build_wins_over_path(tmp_path: Path) -> None:
    cached = _executable(tmp_path, "cached-llama-server")
    found = find_llama_server(_settings(tmp_path), _path_has_server, _cache_with(cached))
    assert found == str(cached)


def test_configured_path_wins_over_cache(tmp_path: Path) -> None:
    configured = _executable(tmp_path, "configured")
    cached = _executable(tmp_path, "cached")
    settings = _settings(tmp_path, llama_server_path=configured)
    assert find_llama_server(settings, _path_has_server, _cache_with(cached)) == str(configured)


def test_path_is_the_last_resort(tmp_path: Path) -> None:
    assert find_llama_server(_settings(tmp_path), _path_has_server, _cache_with(None)) == ON_PATH
    assert find_llama_server(_settings(tmp_path), _nothing_on_path, _cache_with(None)) is None


def test_the_cache_is_looked_up_in_the_configured_cache_dir(tmp_path: Path) -> None:
    asked: list[Path] = []

    def built(cache_dir: Path) -> Path | None:
        asked.append(cache_dir)
        return None

    find_llama_server(_settings(tmp_path / "c"), _nothing_on_path, built)
    assert asked == [tmp_path / "c"]


def test_auto_uses_the_cached_build_only_without_llama_cpp_python(tmp_path: Path) -> None:
    cached = _executable(tmp_path, "cached")
    with_python = choose_engine(
        _settings(tmp_path),
        which=_nothing_on_path,
        python_available=lambda: True,
        built=_cache_with(cached),
    )
    assert with_python.name == "llama-cpp-python"
    without = choose_engine(
        _settings(tmp_path),
        which=_nothing_on_path,
        python_available=lambda: False,
        built=_cache_with(cached),
    )
    assert without == EngineChoice("llama-server", str(cached))


def test_auto_with_a_configured_llama_server_runs_it(tmp_path: Path) -> None:
    configured = _executable(tmp_path, "configured")
    choice = choose_engine(
        _settings(tmp_path, llama_server_path=configured),
        which=_nothing_on_path,
        python_available=lambda: True,
        built=_cache_with(None),
    )
    assert choice == EngineChoice("llama-server", str(configured))
    with pytest.raises(EngineError, match="no executable llama-server"):
        choose_engine(
            _settings(tmp_path, llama_server_path=tmp_path / "missing"),
            which=_nothing_on_path,
            python_available=lambda: True,
            built=_cache_with(None),
        )


def test_requested_llama_server_missing_points_to_the_build(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="run grse engine build"):
        choose_engine(
            _settings(tmp_path, engine="llama-server"),
            which=_nothing_on_path,
            built=_cache_with(None),
        )


class FakeBuild:
    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.calls: list[Path] = []

    def __call__(self, cache_dir: Path, progress: Callable[[str], None]) -> Path:
        self.calls.append(cache_dir)
        progress("building")
        return self.binary


def test_build_if_missing_builds_once_when_asked(tmp_path: Path) -> None:
    build = FakeBuild(tmp_path / "new-llama-server")
    lines: list[str] = []
    settings = _settings(tmp_path, engine="llama-server", build_if_missing=True)
    choice = ensure_engine(
        settings, lines.append, which=_nothing_on_path, built=_cache_with(None), build=build
    )
    assert choice == EngineChoice("llama-server", str(tmp_path / "new-llama-server"))
    assert build.calls == [tmp_path] and lines == ["building"]


def test_no_build_when_found_or_not_asked(tmp_path: Path) -> None:
    build = FakeBuild(tmp_path / "never")
    cached = _executable(tmp_path, "cached")
    found = ensure_engine(
        _settings(tmp_path, engine="llama-server", build_if_missing=True),
        print,
        which=_nothing_on_path,
        built=_cache_with(cached),
        build=build,
    )
    assert found.executable == str(cached)
    with pytest.raises(EngineError, match="run grse engine build"):
        ensure_engine(
            _settings(tmp_path, engine="llama-server"),
            print,
            which=_nothing_on_path,
            built=_cache_with(None),
            build=build,
        )
    # auto never builds: a new user does not pay for a build that is not asked for.
    auto = _settings(tmp_path, build_if_missing=True)
    with pytest.raises(EngineError, match="no local engine"):
        choose_engine(auto, which=_nothing_on_path, python_available=lambda: False,
                      built=_cache_with(None))  # fmt: skip
    assert build.calls == []


def test_build_if_missing_with_a_bad_configured_path_is_an_error(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, engine="llama-server", build_if_missing=True, llama_server_path=tmp_path / "no"
    )
    with pytest.raises(EngineError, match="is not an executable file"):
        ensure_engine(settings, print, which=_nothing_on_path, built=_cache_with(None),
                      build=FakeBuild(tmp_path / "x"))  # fmt: skip


def test_engine_settings_come_through_the_config_path(tmp_path: Path) -> None:
    config = load_config(env={"GRSE_ENGINE_BUILD_IF_MISSING": "true"})
    assert config.engine.build_if_missing is True
    assert EngineSettings().build_if_missing is False


def test_llama_server_flags_unified_kv_slots_and_prompt_cache(tmp_path: Path) -> None:
    settings = _settings(tmp_path, n_ctx=2048, n_parallel=4, threads=2)
    command = build_engine_command(
        EngineChoice("llama-server", "/bin/llama-server"), Path("/m.gguf"), settings, 7777
    )
    joined = " ".join(command)
    for flag in ("--kv-unified", "--cache-prompt", "--jinja", "--metrics", "--no-webui"):
        assert flag in command
    assert "--parallel 4" in joined and "--ctx-size 8192" in joined
    assert "--kv-unified-per-slot 2048" in joined
    assert "--threads 2 --threads-batch 2" in joined


# Lines of a real llama-server log (the built 0.3.36 binary, small model; timestamps and
# per-token rates cut): a 1,386-token prompt, the same prefix again, then one n=4 request
# (tasks 19-21 are its child samples).
# The engine's /metrics reported prompt_tokens_total 1405, prompt_tokens_cached_total 2751,
# prompt_seconds_total 10.4006, tokens_predicted_total 80 for the same run.
LLAMA_SERVER_LOG = """\
slot launch_slot_: id  3 | task 0 | processing task, is_child = 0
slot   operator(): id  3 | task 0 | cached n_tokens = 0, memory_seq_rm [0, end)
slot print_timing: id  3 | task 0 | prompt eval time =    9814.54 ms /  1386 tokens
slot print_timing: id  3 | task 0 |        eval time =     246.28 ms /     8 tokens
slot      release: id  3 | task 0 | stop processing: n_tokens = 1393, truncated = 0
slot launch_slot_: id  3 | task 9 | processing task, is_child = 0
slot   operator(): id  3 | task 9 | cached n_tokens = 1378, memory_seq_rm [1378, end)
slot print_timing: id  3 | task 9 | prompt eval time =     269.67 ms /     9 tokens
slot print_timing: id  3 | task 9 |        eval time =     266.71 ms /     8 tokens
slot      release: id  3 | task 9 | stop processing: n_tokens = 1394, truncated = 0
slot launch_slot_: id  0 | task 19 | processing task, is_child = 1
slot launch_slot_: id  1 | task 20 | processing task, is_child = 1
slot launch_slot_: id  2 | task 21 | processing task, is_child = 1
slot launch_slot_: id  3 | task 18 | processing task, is_child = 0
slot   operator(): id  3 | task 18 | cached n_tokens = 1373, memory_seq_rm [1373, end)
slot print_timing: id  0 | task 19 | prompt eval time =     319.40 ms /    10 tokens
slot print_timing: id  0 | task 19 |        eval time =    1699.20 ms /    16 tokens
slot      release: id  0 | task 19 | stop processing: n_tokens = 1398, truncated = 0
slot print_timing: id  1 | task 20 | prompt eval time =     319.75 ms /    10 tokens
slot print_timing: id  1 | task 20 |        eval time =    1699.28 ms /    16 tokens
slot      release: id  1 | task 20 | stop processing: n_tokens = 1398, truncated = 0
slot print_timing: id  2 | task 21 | prompt eval time =     320.13 ms /    10 tokens
slot print_timing: id  2 | task 21 |        eval time =    1699.28 ms /    16 tokens
slot      release: id  2 | task 21 | stop processing: n_tokens = 1398, truncated = 0
slot print_timing: id  3 | task 18 | prompt eval time =     320.49 ms /    10 tokens
slot print_timing: id  3 | task 18 |        eval time =    1699.28 ms /    16 tokens
slot      release: id  3 | task 18 | stop processing: n_tokens = 1398, truncated = 0
"""


def test_llama_server_log_counts_tokens_reused_from_the_slot_cache() -> None:
    stats = parse_prompt_eval_stats(LLAMA_SERVER_LOG)
    assert stats.completions == 6  # 1 + 1 + the four samples of the n=4 request
    assert stats.evaluated_prompt_tokens == 1405  # the n=4 prompt counted once
    assert stats.reused_prompt_tokens == 2751
    assert stats.prompt_eval_ms == pytest.approx(10404.7)
    assert stats.generated_tokens == 80
