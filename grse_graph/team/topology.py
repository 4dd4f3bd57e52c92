"""Topology builders: how the agent nodes of a team are wired into a StateGraph.

Each topology name of `TeamSpec.topology` maps to one builder. A builder receives the team and a
factory that makes the node function of one agent, and returns the uncompiled graph. Adding a
topology (a supervisor calling sub-agents, peers) means adding a literal to
`grse_graph.team.spec.Topology` and a builder here; node behaviour and recording stay shared.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from .spec import AgentSpec, TeamSpec
from .state import TeamState


class AgentNode(Protocol):
    """The node function of one agent: reads the state, returns the state update."""

    def __call__(self, state: TeamState, config: RunnableConfig) -> Awaitable[dict[str, Any]]: ...


class AgentNodeFactory(Protocol):
    """Makes the node of the agent at `position`; `final` nodes write the team's answer."""

    def __call__(self, agent: AgentSpec, position: int, *, final: bool) -> AgentNode: ...


TopologyBuilder = Callable[[TeamSpec, AgentNodeFactory], StateGraph]


def build_sequential(spec: TeamSpec, make_node: AgentNodeFactory) -> StateGraph:
    """Agents in order: START -> agent 1 -> ... -> agent N -> END; agent N answers."""
    graph = StateGraph(TeamState)
    previous = START
    last = len(spec.agents) - 1
    for position, agent in enumerate(spec.agents):
        graph.add_node(agent.name, make_node(agent, position, final=position == last))
        graph.add_edge(previous, agent.name)
        previous = agent.name
    graph.add_edge(previous, END)
    return graph


TOPOLOGIES: Mapping[str, TopologyBuilder] = MappingProxyType({"sequential": build_sequential})


def topology_builder(name: str) -> TopologyBuilder:
    """The builder registered for a topology name."""
    try:
        return TOPOLOGIES[name]
    except KeyError:
        known = ", ".join(sorted(TOPOLOGIES))
        raise KeyError(f"unknown team topology {name!r} (known: {known})") from None
