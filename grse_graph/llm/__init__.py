"""Model roles (actor, critic, optimizer), the one client path, accounting and the local engine:
everything that needs a model receives a `ChatModelProvider` (the real one: `ModelRoles`).
"""

# ruff: noqa: F401  (the type checkers' imports below are the public names, see __all__)
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers; the names load lazily (`__getattr__`)
    from grse_graph.llm.accounting import PromptEvalStats, RoleUsage, UsageLedger, UsageReport
    from grse_graph.llm.config import EngineSettings, LLMConfig, RoleSettings, load_config
    from grse_graph.llm.engine import LocalEngine
    from grse_graph.llm.models import resolve_model
    from grse_graph.llm.provider import ROLES, ChatModelProvider, RoleName, SamplingSettings
    from grse_graph.llm.roles import ModelRoles
    from grse_graph.llm.structured import astructured_call, structured_call
    from grse_graph.llm.vllm import build_vllm_command

_HOME = {
    "accounting": ("PromptEvalStats", "RoleUsage", "UsageLedger", "UsageReport"),
    "config": ("EngineSettings", "LLMConfig", "RoleSettings", "load_config"),
    "engine": ("LocalEngine",),
    "models": ("resolve_model",),
    "provider": ("ROLES", "ChatModelProvider", "RoleName", "SamplingSettings"),
    "roles": ("ModelRoles",),
    "structured": ("astructured_call", "structured_call"),
    "vllm": ("build_vllm_command",),
}
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    # Imported on first use: reading a config (the CLI's start, `grse skills`, the engine's
    # child process) does not pay for langchain and openai, which only a model call needs.
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'grse_graph.llm' has no attribute {name!r}")
    return getattr(import_module(f"grse_graph.llm.{module}"), name)
