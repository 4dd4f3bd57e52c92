"""Model roles (actor, critic, optimizer), the one client path, accounting and the local engine.

Everything that needs a model receives a `ChatModelProvider`; the real one is `ModelRoles`,
configured by an `LLMConfig` (`load_config`) and recording into a `UsageLedger`. Structured
output goes through `structured_call`. `LocalEngine` runs llama.cpp on loopback.
"""

from grse_graph.llm.accounting import PromptEvalStats, RoleUsage, UsageLedger, UsageReport
from grse_graph.llm.config import EngineSettings, LLMConfig, RoleSettings, load_config
from grse_graph.llm.engine import LocalEngine
from grse_graph.llm.models import resolve_model
from grse_graph.llm.provider import ROLES, ChatModelProvider, RoleName, SamplingSettings
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.structured import astructured_call, structured_call
from grse_graph.llm.vllm import build_vllm_command

__all__ = [
    "ROLES",
    "ChatModelProvider",
    "EngineSettings",
    "LLMConfig",
    "LocalEngine",
    "ModelRoles",
    "PromptEvalStats",
    "RoleName",
    "RoleSettings",
    "RoleUsage",
    "SamplingSettings",
    "UsageLedger",
    "UsageReport",
    "astructured_call",
    "build_vllm_command",
    "load_config",
    "resolve_model",
    "structured_call",
]
