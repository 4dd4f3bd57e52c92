"""The two-agent team on the bundled demo task, for `langgraph dev` / LangGraph Studio.

Importing this module starts nothing and contacts no server. The actor endpoint comes from the
grse configuration read from the environment (`GRSE_ACTOR_BASE_URL`, `GRSE_ACTOR_MODEL`, ...;
see `grse_graph.llm.config.load_config`). The default configuration points at the embedded
engine, which a graph server cannot start: set `GRSE_ACTOR_BASE_URL` to a running
OpenAI-compatible endpoint (for example the URL `grse serve` prints, or a vLLM server).
Input: `{"question": {"id": ..., "question": ..., "answer": ..., "passages": [...]}}`, for
example a question of `grse_graph.tasks.load_task("demo").split("test")`.

The graph is compiled without a checkpointer: the LangGraph server adds its own.
"""

from __future__ import annotations

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.provider import SamplingSettings
from grse_graph.llm.roles import ModelRoles
from grse_graph.tasks import load_task
from grse_graph.team import build_team_graph, default_team

_task = load_task("demo")
_provider = ModelRoles(load_config(), UsageLedger())

graph = build_team_graph(default_team(_task), _task, _provider, sampling=SamplingSettings.greedy())
