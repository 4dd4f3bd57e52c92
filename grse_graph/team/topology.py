"""Team topologies: how the agent nodes of a team are wired into a StateGraph.

A topology has a name, a `build` that receives the team and a factory making the node function
of one agent and returns the uncompiled graph, and an `opening` naming the agent turn whose first
model call is the same for every rollout of a question (so a group can sample it once with
`n` choices), or None when no such turn exists.

Built in (MASkills' three topologies, `../shared/specs/maskills.md` §7):
- `sequential`: agents in order, each seeing the earlier responses; the last one answers
  (MASkills' decentralized team, the paper's default).
- `centralized`: the last agent is the main agent; it sees only the question and reaches each
  other agent through a tool `ask_<agent>`. Every such call runs that sub-agent in a fresh
  context (the full task input plus the request) and is recorded as one step of the sub-agent;
  the main agent's own turn is recorded after them and gives the answer.
- `hybrid` (MASkills' name for the paper's hierarchical variant): centralized, but every
  sub-agent call also sees all earlier (request, response) pairs of the rollout.

`TOPOLOGIES` is an immutable `TopologyRegistry`; `TOPOLOGIES.with_topology(mine)` returns a new
registry that a `TeamSpec` carries (`TeamSpec(..., topology="mine", topologies=registry)`), so a
team built on a topology of your own reaches `run_rollout` and training like a built-in one.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, Field

from grse_graph.errors import ConfigError

from .named_registry import NamedRegistry
from .state import TeamState

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from grse_graph.tasks.base import Task

    from .spec import AgentSpec, TeamSpec


class Delegation(BaseModel):
    """How a main agent reaches its sub-agents: one tool per sub-agent.

    `max_calls` caps the delegations of one turn (they share the main agent's tool budget with
    its own task tools); `force_first` makes the first model call a call of the first sub-agent's
    tool (a main agent that sees only the question cannot answer without evidence, and small
    models do not call tools reliably on their own); `history` gives every call the earlier
    (request, response) pairs of the rollout (hybrid).
    """

    model_config = ConfigDict(frozen=True)

    sub_agents: tuple[str, ...] = Field(min_length=1)
    max_calls: int = Field(default=2, ge=1)
    force_first: bool = True
    history: bool = False


class OpeningTurn(BaseModel):
    """The agent turn that opens every rollout of a question with the same prompt."""

    model_config = ConfigDict(frozen=True)

    agent: str
    delegation: Delegation | None = None


class AgentNode(Protocol):
    """The node function of one agent: reads the state, returns the state update."""

    def __call__(self, state: TeamState, config: RunnableConfig) -> Awaitable[dict[str, Any]]: ...


class AgentNodeFactory(Protocol):
    """Makes the node of the agent at `position`; `final` nodes write the team's answer; with a
    `delegation` the agent is a main agent calling its sub-agents through tools. It also knows
    what the team runs with: the `task` and the rollout's actor model (`actor_model()`), for
    topologies whose nodes are not agent turns (a graph of your own)."""

    @property
    def task(self) -> Task: ...

    def actor_model(self) -> BaseChatModel: ...

    def __call__(
        self,
        agent: AgentSpec,
        position: int,
        *,
        final: bool,
        delegation: Delegation | None = None,
    ) -> AgentNode: ...


@runtime_checkable
class TeamTopology(Protocol):
    """A way to connect a team's agents. Nodes must add every agent turn they run to the
    state's `steps` (that is what credit reads) and the final node must write `answer`."""

    @property
    def name(self) -> str: ...

    def build(self, spec: TeamSpec, make_node: AgentNodeFactory) -> StateGraph: ...

    def opening(self, spec: TeamSpec) -> OpeningTurn | None: ...


@dataclass(frozen=True)
class SequentialTopology:
    """Agents in order: START -> agent 1 -> ... -> agent N -> END; agent N answers."""

    name: str = "sequential"

    def build(self, spec: TeamSpec, make_node: AgentNodeFactory) -> StateGraph:
        graph = StateGraph(TeamState)
        previous = START
        last = len(spec.agents) - 1
        for position, agent in enumerate(spec.agents):
            graph.add_node(agent.name, make_node(agent, position, final=position == last))
            graph.add_edge(previous, agent.name)
            previous = agent.name
        graph.add_edge(previous, END)
        return graph

    def opening(self, spec: TeamSpec) -> OpeningTurn | None:
        return OpeningTurn(agent=spec.agents[0].name)


@dataclass(frozen=True)
class DelegatingTopology:
    """A main agent (the team's last agent, the one that answers) that calls every other agent
    through a tool; see `Delegation` for the settings. One graph node: the sub-agents run inside
    the main agent's tool calls, each call recorded as a step of that sub-agent."""

    name: str
    history: bool = False
    max_calls: int = 2
    force_first: bool = True

    def delegation(self, spec: TeamSpec) -> Delegation:
        """The main agent's delegation settings for this team."""
        if len(spec.agents) < 2:
            raise ConfigError(
                f"topology {self.name!r} needs at least two agents (a main agent and a sub-agent)"
            )
        return Delegation(
            sub_agents=tuple(a.name for a in spec.agents[:-1]),
            max_calls=self.max_calls,
            force_first=self.force_first,
            history=self.history,
        )

    def build(self, spec: TeamSpec, make_node: AgentNodeFactory) -> StateGraph:
        delegation = self.delegation(spec)
        main = spec.agents[-1]
        graph = StateGraph(TeamState)
        graph.add_node(
            main.name, make_node(main, len(spec.agents) - 1, final=True, delegation=delegation)
        )
        graph.add_edge(START, main.name)
        graph.add_edge(main.name, END)
        return graph

    def opening(self, spec: TeamSpec) -> OpeningTurn | None:
        return OpeningTurn(agent=spec.agents[-1].name, delegation=self.delegation(spec))


class TopologyRegistry(NamedRegistry[TeamTopology]):
    """An immutable name -> topology mapping; `with_topology` returns an extended copy."""

    kind = "team topology"
    entry_type = TeamTopology
    needs = "needs `name`, `build(spec, make_node)` and `opening(spec)`"

    def with_topology(self, topology: TeamTopology) -> TopologyRegistry:
        """A registry with `topology` added (a name already registered is an error)."""
        return TopologyRegistry(self._extended(topology))


TOPOLOGIES = TopologyRegistry(
    [
        SequentialTopology(),
        DelegatingTopology(name="centralized"),
        DelegatingTopology(name="hybrid", history=True),
    ]
)
TOPOLOGY_NAMES: tuple[str, ...] = tuple(TOPOLOGIES)
