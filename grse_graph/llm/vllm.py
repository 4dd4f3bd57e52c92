"""The ``vllm serve`` command for GPU machines: prefix caching on (group rollouts share long
prefixes), and automatic tool choice with the tool-call parser of the model's family (none, with
a warning, for an unknown family; structured output still works).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_PARSERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"qwen|qwq|hermes"), "hermes"),
    (re.compile(r"llama[-_ .]?3"), "llama3_json"),
    (re.compile(r"mistral|mixtral|ministral"), "mistral"),
)


def tool_call_parser(model: str) -> str | None:
    """vLLM ``--tool-call-parser`` for the model family, or None when unknown."""
    name = model.lower()
    return next((parser for pattern, parser in _PARSERS if pattern.search(name)), None)


@dataclass(frozen=True)
class VllmPlan:
    """The command to run and warnings to show before running it."""

    command: list[str]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class VllmServe:
    """What one ``vllm serve`` is asked for: the model, its parallelism, context and address."""

    model: str
    tensor_parallel: int = 1
    data_parallel: int = 1
    max_model_len: int | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    served_name: str | None = None
    executable: str = "vllm"


def plan_vllm(serve: VllmServe) -> VllmPlan:
    """Build the ``vllm serve`` command plus warnings (unknown tool-call parser)."""
    if serve.tensor_parallel < 1 or serve.data_parallel < 1:
        raise ValueError("tensor_parallel and data_parallel must be >= 1")
    command = [
        serve.executable, "serve", serve.model,
        "--host", serve.host,
        "--port", str(serve.port),
        "--tensor-parallel-size", str(serve.tensor_parallel),
        "--data-parallel-size", str(serve.data_parallel),
        "--enable-prefix-caching",
    ]  # fmt: skip
    if serve.served_name is not None:
        command += ["--served-model-name", serve.served_name]
    if serve.max_model_len is not None:
        command += ["--max-model-len", str(serve.max_model_len)]
    warnings: list[str] = []
    parser = tool_call_parser(serve.model)
    if parser is None:
        warnings.append(
            f"unknown model family for {serve.model!r}: no --enable-auto-tool-choice "
            "(free tool calls will not work; structured output still does)"
        )
    else:
        command += ["--enable-auto-tool-choice", "--tool-call-parser", parser]
    return VllmPlan(command=command, warnings=warnings)


def build_vllm_command(model: str, **options: Any) -> list[str]:
    """The ``vllm serve`` argument list: `plan_vllm`'s command (its options, without warnings)."""
    return plan_vllm(VllmServe(model, **options)).command
