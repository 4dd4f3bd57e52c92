"""Which engine starts (a configured llama-server binary > xllamacpp > llama-server on PATH),
the same flags for both, and the server log's counts (no process is started)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from grse_graph.errors import EngineError
from grse_graph.llm.config import EngineSettings
from grse_graph.llm.engine import (
    EngineChoice,
    build_engine_command,
    choose_engine,
    free_port,
    parse_prompt_eval_stats,
    server_launch,
)
from grse_graph.llm.xllamacpp_server import ServerLaunch

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


def test_auto_runs_xllamacpp_even_with_llama_server_on_path(tmp_path: Path) -> None:
    choice = choose_engine(
        _settings(tmp_path), which=_path_has_server, xllamacpp_found=lambda: True
    )
    assert choice.name == "xllamacpp"


def test_a_configured_llama_server_wins_over_xllamacpp(tmp_path: Path) -> None:
    binary = _executable(tmp_path, "llama-server")
    settings = _settings(tmp_path, llama_server_path=binary)
    choice = choose_engine(settings, which=_nothing_on_path, xllamacpp_found=lambda: True)
    assert choice == EngineChoice("llama-server", str(binary))


def test_auto_without_xllamacpp_takes_llama_server_from_path(tmp_path: Path) -> None:
    choice = choose_engine(
        _settings(tmp_path), which=_path_has_server, xllamacpp_found=lambda: False
    )
    assert choice == EngineChoice("llama-server", ON_PATH)


def test_missing_engines_are_one_line_errors_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match=r"grse-graph\[local\]"):
        choose_engine(_settings(tmp_path), which=_nothing_on_path, xllamacpp_found=lambda: False)
    with pytest.raises(EngineError, match="no executable llama-server found"):
        choose_engine(
            _settings(tmp_path, engine="llama-server"),
            which=_nothing_on_path,
            xllamacpp_found=lambda: True,
        )
    with pytest.raises(EngineError, match="no executable llama-server found"):
        choose_engine(
            _settings(tmp_path, llama_server_path=tmp_path / "missing"),
            which=_path_has_server,
            xllamacpp_found=lambda: True,
        )


def _launch(tmp_path: Path) -> ServerLaunch:
    settings = _settings(tmp_path, n_ctx=2048, n_parallel=4, threads=2)
    return server_launch(Path("/m.gguf"), settings, 7777)


def test_llama_server_flags_a_kv_stream_per_slot_and_no_host_memory_cache(tmp_path: Path) -> None:
    command = build_engine_command(
        EngineChoice("llama-server", "/bin/llama-server"), _launch(tmp_path)
    )
    joined = " ".join(command)
    for flag in ("--cache-prompt", "--jinja", "--metrics", "--no-webui"):
        assert flag in command
    assert "--kv-unified" not in command
    assert "--parallel 4" in joined and "--ctx-size 8192" in joined and "--cache-ram 0" in joined
    assert "--threads 2 --threads-batch 2" in joined and "--flash-attn off" in joined


def test_xllamacpp_runs_the_same_launch_in_a_child_python(tmp_path: Path) -> None:
    launch = _launch(tmp_path)
    command = build_engine_command(EngineChoice("xllamacpp", "/usr/bin/python3"), launch)
    assert command[:3] == ["/usr/bin/python3", "-m", "grse_graph.llm.xllamacpp_server"]
    assert ServerLaunch.model_validate(json.loads(command[3])) == launch


def test_free_port_is_bindable() -> None:
    port = free_port("127.0.0.1")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", port))


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
