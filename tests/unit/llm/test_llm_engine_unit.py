"""Engine selection, command lines and log parsing (no process is started)."""

from __future__ import annotations

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
)


def _settings(tmp_path: Path, **values: object) -> EngineSettings:
    return EngineSettings(cache_dir=tmp_path, **values)  # type: ignore[arg-type]


def test_auto_prefers_llama_cpp_python_over_llama_server_on_path(tmp_path: Path) -> None:
    on_path = lambda name: "/opt/bin/llama-server" if name == "llama-server" else None  # noqa: E731
    choice = choose_engine(_settings(tmp_path), which=on_path, python_available=lambda: True)
    assert choice.name == "llama-cpp-python"
    fallback = choose_engine(_settings(tmp_path), which=on_path, python_available=lambda: False)
    assert fallback == EngineChoice("llama-server", "/opt/bin/llama-server")


def test_auto_falls_back_to_llama_cpp_python(tmp_path: Path) -> None:
    choice = choose_engine(
        _settings(tmp_path), which=lambda name: None, python_available=lambda: True
    )
    assert choice.name == "llama-cpp-python"


def test_explicit_python_engine_ignores_llama_server(tmp_path: Path) -> None:
    choice = choose_engine(
        _settings(tmp_path, engine="llama-cpp-python"),
        which=lambda name: "/opt/bin/llama-server",
        python_available=lambda: True,
    )
    assert choice.name == "llama-cpp-python"


def test_configured_llama_server_path(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n", encoding="utf-8")
    binary.chmod(0o755)
    choice = choose_engine(
        _settings(tmp_path, llama_server_path=binary),
        which=lambda name: None,
        python_available=lambda: False,
    )
    assert choice == EngineChoice("llama-server", str(binary))


def test_missing_engines_are_errors(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="no executable llama-server"):
        choose_engine(
            _settings(tmp_path, engine="llama-server"),
            which=lambda name: None,
            python_available=lambda: True,
        )
    with pytest.raises(EngineError, match="no local engine"):
        choose_engine(_settings(tmp_path), which=lambda name: None, python_available=lambda: False)


def test_llama_cpp_python_command_enables_function_calling(tmp_path: Path) -> None:
    settings = _settings(tmp_path, n_ctx=4096, threads=2)
    command = build_engine_command(
        EngineChoice("llama-cpp-python", "/usr/bin/python3"), Path("/m.gguf"), settings, 5555
    )
    joined = " ".join(command)
    assert command[:3] == ["/usr/bin/python3", "-m", "llama_cpp.server"]
    assert "--chat_format chatml-function-calling" in joined
    assert "--n_ctx 4096" in joined and "--n_threads 2" in joined
    assert "--host 127.0.0.1 --port 5555" in joined
    assert "--verbose true" in joined
    assert "--logits_all false" in joined
    assert "--flash_attn false" in joined


def test_engine_speed_settings_can_restore_the_server_defaults(tmp_path: Path) -> None:
    settings = _settings(tmp_path, flash_attention=True, prompt_logits=True)
    python_command = build_engine_command(
        EngineChoice("llama-cpp-python", "/usr/bin/python3"), Path("/m.gguf"), settings, 1
    )
    server_command = build_engine_command(
        EngineChoice("llama-server", "/bin/llama-server"), Path("/m.gguf"), settings, 1
    )
    assert "--flash_attn true" in " ".join(python_command)
    assert "--logits_all true" in " ".join(python_command)
    assert "--flash-attn on" in " ".join(server_command)


def test_llama_server_command_uses_jinja_and_slots(tmp_path: Path) -> None:
    settings = _settings(tmp_path, n_ctx=2048, n_parallel=4, threads=2)
    command = build_engine_command(
        EngineChoice("llama-server", "/bin/llama-server"), Path("/m.gguf"), settings, 7777
    )
    joined = " ".join(command)
    assert "--jinja" in command
    assert "--parallel 4" in joined
    assert "--ctx-size 8192" in joined
    assert "--port 7777" in joined
    assert "--flash-attn off" in joined


def test_free_port_is_bindable() -> None:
    assert 0 < free_port("127.0.0.1") < 65536


LLAMA_CPP_PYTHON_LOG = """\
llama_perf_context_print:        load time =     120.00 ms
llama_perf_context_print: prompt eval time =     400.00 ms /  1000 tokens (    0.40 ms per token)
llama_perf_context_print:        eval time =     100.00 ms /    10 runs   (   10.00 ms per token)
llama_perf_context_print:       total time =     510.00 ms /  1010 tokens
Llama.generate: 995 prefix-match hit, remaining 12 prompt tokens to eval
llama_perf_context_print: prompt eval time =      20.00 ms /    12 tokens (    1.67 ms per token)
llama_perf_context_print:        eval time =      50.00 ms /     5 runs   (   10.00 ms per token)
"""


def test_log_parser_counts_evaluated_and_reused_tokens() -> None:
    stats = parse_prompt_eval_stats(LLAMA_CPP_PYTHON_LOG)
    assert stats.completions == 2
    assert stats.evaluated_prompt_tokens == 1012
    assert stats.reused_prompt_tokens == 995
    assert stats.prompt_eval_ms == pytest.approx(420.0)
    assert stats.generated_tokens == 15
    assert stats.generation_ms == pytest.approx(150.0)


def test_log_stats_difference_isolates_one_request() -> None:
    first = parse_prompt_eval_stats(LLAMA_CPP_PYTHON_LOG.split("Llama.generate")[0])
    both = parse_prompt_eval_stats(LLAMA_CPP_PYTHON_LOG)
    second = both - first
    assert (second.completions, second.evaluated_prompt_tokens) == (1, 12)
    assert second.reused_prompt_tokens == 995


def test_llama_server_timing_lines_are_understood() -> None:
    log = (
        "prompt eval time =     123.40 ms /   321 tokens (    0.38 ms per token)\n"
        "       eval time =     800.00 ms /    20 tokens (   40.00 ms per token)\n"
    )
    stats = parse_prompt_eval_stats(log)
    assert (stats.evaluated_prompt_tokens, stats.generated_tokens) == (321, 20)
