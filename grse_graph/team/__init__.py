"""The agent team: a TeamSpec compiled into a LangGraph StateGraph that yields Rollouts."""

from .agent import PresampledReply
from .answer import extract_answer
from .graph import build_team_graph, compose_input, input_ref, question_kind
from .rollout import CallEvent, Rollout, Step, StepUsage, ToolCallRecord
from .run import run_rollout, sample_openings
from .spec import (
    FIRST_AGENT,
    SECOND_AGENT,
    AgentSpec,
    QuestionKind,
    SkillMode,
    TeamSpec,
    Topology,
    default_team,
)
from .state import TeamState
from .tool_protocols import (
    TOOL_PROTOCOLS,
    FunctionCalling,
    TextCalls,
    ToolProtocol,
    ToolProtocolRegistry,
)
from .topology import (
    TOPOLOGIES,
    TOPOLOGY_NAMES,
    AgentNodeFactory,
    DelegatingTopology,
    Delegation,
    OpeningTurn,
    SequentialTopology,
    TeamTopology,
    TopologyRegistry,
)

__all__ = [
    "FIRST_AGENT",
    "SECOND_AGENT",
    "TOOL_PROTOCOLS",
    "TOPOLOGIES",
    "TOPOLOGY_NAMES",
    "AgentNodeFactory",
    "AgentSpec",
    "CallEvent",
    "DelegatingTopology",
    "Delegation",
    "FunctionCalling",
    "OpeningTurn",
    "PresampledReply",
    "QuestionKind",
    "Rollout",
    "SequentialTopology",
    "SkillMode",
    "Step",
    "StepUsage",
    "TeamSpec",
    "TeamState",
    "TeamTopology",
    "TextCalls",
    "ToolCallRecord",
    "ToolProtocol",
    "ToolProtocolRegistry",
    "Topology",
    "TopologyRegistry",
    "build_team_graph",
    "compose_input",
    "default_team",
    "extract_answer",
    "input_ref",
    "question_kind",
    "run_rollout",
    "sample_openings",
]
