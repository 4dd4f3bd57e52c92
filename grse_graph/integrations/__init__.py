"""Your own LangChain / LangGraph agents, trained like the built-in team.

- `SkillLibraryMiddleware`: gives any `create_agent` agent its skill library (inline, as the
  `load_skill` tool, or path-based as in a shipped pack) and records what it used.
- `graph_team`: turns your compiled graph of such agents into a `TeamSpec` that `run_rollout`,
  evaluation and every training method use; each agent invocation becomes a `Step`.
"""

from .graph_team import (
    GRAPH_TOPOLOGY,
    GraphTeamError,
    GraphTopology,
    graph_team,
    last_message_answer,
    messages_input,
)
from .middleware import SKILLS_USED_KEY, SkillLibraryMiddleware, SkillsAgentState
from .recording import TEAM_RUN_KEY, StepLog, TeamRun, current_team_run

__all__ = [
    "GRAPH_TOPOLOGY",
    "SKILLS_USED_KEY",
    "TEAM_RUN_KEY",
    "GraphTeamError",
    "GraphTopology",
    "SkillLibraryMiddleware",
    "SkillsAgentState",
    "StepLog",
    "TeamRun",
    "current_team_run",
    "graph_team",
    "last_message_answer",
    "messages_input",
]
