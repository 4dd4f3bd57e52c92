"""What a team is: agents (role, tools, skill library, how skills are given) and a topology.

A `TeamSpec` is data; `grse_graph.team.graph.build_team_graph` compiles it into a LangGraph
`StateGraph` with the builder registered for its `topology`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grse_graph.errors import ConfigError
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task

from .kinds import QuestionKind, SkillMode
from .layout import PromptLayout
from .prompts import load_prompt
from .tool_protocols import FUNCTION_PROTOCOL, TOOL_PROTOCOLS, ToolProtocolRegistry
from .topology import TOPOLOGIES, OpeningTurn, TopologyRegistry

# A topology name, resolved in the team's `topologies` registry (built-in: sequential,
# centralized, hybrid; see `grse_graph.team.topology`).
Topology = str


class AgentSpec(BaseModel):
    """One agent of a team.

    `role` is the role prompt; `role_by_kind` overrides it per question kind, for tasks that mix
    passage questions and conversation questions (the demo task). `tools` names the task tools
    the agent may use (None: every tool the task gives this agent). `max_tool_calls` caps the
    task-tool calls of one turn; `force_first_tool` makes the first model call a forced call of
    the first task tool (retrievers must search before they can say anything useful, and small
    models do not call tools reliably on their own). `sees_tool_results` passes the tool results
    of earlier agents into this agent's input, so a reasoner reads the retrieved turns verbatim.
    `prompt_layout` orders the opening messages (`grse_graph.team.layout`: the paper's
    ``role_first``, or ``input_first``, which lets an engine share the task input's prefix).
    `tool_protocol` names how the agent calls its tools (`grse_graph.team.tool_protocols`:
    ``function`` calling, or the paper's ``text`` calls such as ``<grep>pattern</grep>``, which
    cannot force a first call, so `force_first_tool` applies to ``function`` only).

    An unknown argument is an error, never dropped: a team of your own `create_agent` agents is
    built with `grse_graph.integrations.graph_team`, not with an `agent=` here.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    role: str
    role_by_kind: dict[QuestionKind, str] = Field(default_factory=dict)
    tools: tuple[str, ...] | None = None
    library: SkillLibrary
    skill_mode: SkillMode = "inline"
    max_tool_calls: int = Field(default=3, ge=0)
    force_first_tool: bool = False
    sees_tool_results: bool = False
    prompt_layout: PromptLayout = "role_first"
    tool_protocol: str = FUNCTION_PROTOCOL

    @model_validator(mode="before")
    @classmethod
    def _no_runnable_agent(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "agent" in data:
            raise ValueError(
                "AgentSpec takes no `agent`: to train your own agents, give each one a "
                "SkillLibraryMiddleware and wrap your graph with "
                "grse_graph.integrations.graph_team(graph, [middleware, ...])"
            )
        return data

    def role_for(self, kind: QuestionKind) -> str:
        """The role prompt for a question of this kind."""
        return self.role_by_kind.get(kind, self.role)


class TeamSpec(BaseModel):
    """Agents and how they are connected.

    `topology` names an entry of `topologies` (the built-in registry unless you pass one
    extended with `TOPOLOGIES.with_topology(...)`). In every built-in topology the last agent
    gives the answer. Each agent's `tool_protocol` names an entry of `tool_protocols` (likewise
    `TOOL_PROTOCOLS` unless extended with `TOOL_PROTOCOLS.with_protocol(...)`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    agents: tuple[AgentSpec, ...] = Field(min_length=1)
    topology: Topology = "sequential"
    topologies: TopologyRegistry = Field(default=TOPOLOGIES, exclude=True, repr=False)
    tool_protocols: ToolProtocolRegistry = Field(default=TOOL_PROTOCOLS, exclude=True, repr=False)

    @model_validator(mode="after")
    def _known_topology(self) -> TeamSpec:
        if self.topology not in self.topologies:
            known = ", ".join(sorted(self.topologies))
            raise ValueError(f"unknown team topology {self.topology!r} (known: {known})")
        return self

    @model_validator(mode="after")
    def _known_tool_protocols(self) -> TeamSpec:
        for agent in self.agents:
            if agent.tool_protocol not in self.tool_protocols:
                known = ", ".join(sorted(self.tool_protocols))
                raise ValueError(
                    f"agent {agent.name}: unknown tool protocol {agent.tool_protocol!r} "
                    f"(known: {known})"
                )
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> TeamSpec:
        names = [a.name for a in self.agents]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"agent names must be unique, repeated: {', '.join(duplicates)}")
        return self

    @property
    def agent_names(self) -> list[str]:
        """Agent names in team order."""
        return [a.name for a in self.agents]

    def agent(self, name: str) -> AgentSpec:
        """The agent with this name (KeyError naming the known agents otherwise)."""
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise KeyError(f"no agent {name!r} in team (agents: {', '.join(self.agent_names)})")

    def with_library(self, agent: str, library: SkillLibrary) -> TeamSpec:
        """A copy of the team with one agent's library replaced."""
        self.agent(agent)
        agents = tuple(
            a.model_copy(update={"library": library}) if a.name == agent else a for a in self.agents
        )
        return self.model_copy(update={"agents": agents})

    def with_libraries(self, libraries: Mapping[str, SkillLibrary]) -> TeamSpec:
        """A copy of the team with several agents' libraries replaced."""
        team = self
        for name, library in libraries.items():
            team = team.with_library(name, library)
        return team

    def with_tool_protocol(self, protocol: str) -> TeamSpec:
        """A copy of the team where every agent calls its tools by `protocol` (a name in the
        team's `tool_protocols`; `ConfigError` naming the known ones otherwise)."""
        self.tool_protocols.resolve(protocol)
        agents = tuple(a.model_copy(update={"tool_protocol": protocol}) for a in self.agents)
        return self.model_copy(update={"agents": agents})

    def opening_turn(self) -> OpeningTurn | None:
        """The turn whose first model call every rollout of a question shares (None: the
        topology has none, e.g. a graph of your own; then there is nothing to presample)."""
        return self.topologies.resolve(self.topology).opening(self)

    def with_topology(self, topology: Topology) -> TeamSpec:
        """A copy of the team connected by another topology of its registry."""
        self.topologies.resolve(topology)
        return self.model_copy(update={"topology": topology})

    def libraries(self) -> dict[str, SkillLibrary]:
        """Each agent's current skill library, by agent name."""
        return {a.name: a.library for a in self.agents}


# The paper's two agents. The names are the same for every task kind so a skill library trained
# on one split of the demo task (mixed kinds) belongs to the same agent on every question.
FIRST_AGENT = "retriever"
SECOND_AGENT = "reasoner"

# The paper's retriever makes at most 3 grep calls per rollout.
RETRIEVER_TOOL_CALLS = 3


def default_team(
    task: Task,
    libraries: Mapping[str, SkillLibrary] | None = None,
    skill_mode: SkillMode = "inline",
    topology: Topology = "sequential",
    prompt_layout: PromptLayout = "role_first",
    tool_protocol: str = FUNCTION_PROTOCOL,
) -> TeamSpec:
    """The paper's two-agent team for a task (GUIDE §4), sequential unless another built-in
    `topology` is named (centralized / hybrid: the reasoner is the main agent and asks the
    retriever through a tool).

    Passage tasks (HotpotQA): the first agent reasons over the passages and extracts the evidence
    and bridge entity; the second sees the input and that response and writes the short answer.
    Conversation tasks (LoCoMo): the first agent retrieves evidence with the task's search tool
    (at most 3 calls, the first one forced); the second answers from the retriever's hand-off
    only (it does not see the raw search results).
    Mixed tasks get both role texts and choose per question by whether the task gives the first
    agent tools. Agents without a library in `libraries` start empty. `tool_protocol` is how
    the agents call their tools: ``function`` calling, or the paper's ``text`` calls
    (`grse_graph.team.tool_protocols`).
    """
    libraries = dict(libraries or {})
    unknown = sorted(set(libraries) - {FIRST_AGENT, SECOND_AGENT})
    if unknown:
        raise ConfigError(
            f"no agent {unknown[0]!r} in the default team (agents: {FIRST_AGENT}, {SECOND_AGENT})"
        )
    roles_first: dict[QuestionKind, str] = {
        "passages": load_prompt("passages_reasoner"),
        "conversation": load_prompt("conversation_retriever"),
    }
    roles_second: dict[QuestionKind, str] = {
        "passages": load_prompt("passages_answerer"),
        "conversation": load_prompt("conversation_reasoner"),
    }
    kind = task.kind
    main: QuestionKind = "conversation" if kind == "conversation" else "passages"

    def agent(name: str, roles: dict[QuestionKind, str], **behaviour: Any) -> AgentSpec:
        return AgentSpec(
            name=name,
            role=roles[main],
            role_by_kind=roles if kind == "mixed" else {},
            library=libraries.get(name, SkillLibrary.empty(name)),
            skill_mode=skill_mode,
            prompt_layout=prompt_layout,
            tool_protocol=tool_protocol,
            **behaviour,
        )

    first = agent(
        FIRST_AGENT,
        roles_first,
        max_tool_calls=RETRIEVER_TOOL_CALLS,
        force_first_tool=kind != "passages",
    )
    # The reasoner answers from the retriever's hand-off only, not from raw search results
    # (protocol issue 9 item 6).
    second = agent(SECOND_AGENT, roles_second, tools=(), max_tool_calls=0, sees_tool_results=False)
    if topology not in TOPOLOGIES:
        raise ConfigError(
            f"unknown team topology {topology!r} (known: {', '.join(sorted(TOPOLOGIES))})"
        )
    TOOL_PROTOCOLS.resolve(tool_protocol)
    return TeamSpec(agents=(first, second), topology=topology)
