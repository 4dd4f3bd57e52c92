"""The vllm serve command builder."""

from __future__ import annotations

import pytest

from grse_graph.llm.vllm import VllmServe, build_vllm_command, plan_vllm, tool_call_parser


@pytest.mark.parametrize(
    ("model", "parser"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
        ("Qwen/Qwen2.5-Coder-0.5B-Instruct", "hermes"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3_json"),
        ("meta-llama/Meta-Llama-3-70B-Instruct", "llama3_json"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
        ("google/gemma-3-4b-it", None),
        ("meta-llama/Llama-2-7b-chat-hf", None),
    ],
)
def test_tool_call_parser_by_family(model: str, parser: str | None) -> None:
    assert tool_call_parser(model) == parser


def test_qwen_command_has_prefix_caching_and_hermes_parser() -> None:
    command = build_vllm_command(
        "Qwen/Qwen2.5-7B-Instruct",
        tensor_parallel=2,
        data_parallel=3,
        max_model_len=16384,
        host="0.0.0.0",
        port=8123,
        served_name="actor",
    )
    assert command[:3] == ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]
    joined = " ".join(command)
    assert "--enable-prefix-caching" in command
    assert "--tensor-parallel-size 2" in joined
    assert "--data-parallel-size 3" in joined
    assert "--max-model-len 16384" in joined
    assert "--host 0.0.0.0 --port 8123" in joined
    assert "--served-model-name actor" in joined
    assert "--enable-auto-tool-choice --tool-call-parser hermes" in joined


def test_defaults_leave_out_optional_flags() -> None:
    command = build_vllm_command("Qwen/Qwen2.5-0.5B-Instruct")
    assert "--max-model-len" not in command
    assert "--served-model-name" not in command
    assert "--host" in command and "127.0.0.1" in command


def test_unknown_family_has_no_auto_tool_choice_and_a_warning() -> None:
    plan = plan_vllm(VllmServe("google/gemma-3-4b-it"))
    assert "--enable-auto-tool-choice" not in plan.command
    assert "--tool-call-parser" not in plan.command
    assert len(plan.warnings) == 1 and "gemma-3-4b-it" in plan.warnings[0]
    assert plan_vllm(VllmServe("Qwen/Qwen2.5-7B-Instruct")).warnings == []


def test_parallel_sizes_must_be_positive() -> None:
    with pytest.raises(ValueError):
        build_vllm_command("Qwen/Qwen2.5-7B-Instruct", tensor_parallel=0)
