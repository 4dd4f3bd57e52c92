"""A team made of your own compiled LangGraph graph, for evaluation and every training method.

    team = graph_team(my_graph, [retriever_skills, reasoner_skills])
    run_rollout(team, task, question, provider, ...)      # or TrainingDeps(team=team, ...)

`graph_team` returns an ordinary `TeamSpec` whose topology (`GraphTopology`) runs your graph as
one node of the team graph. Each `SkillLibraryMiddleware` of your agents becomes one agent of
the spec (its name and library; `team.with_libraries(...)` swaps libraries as for any team).
A rollout puts a `TeamRun` into the run config: the middleware of every agent that runs reads
the rollout's libraries and model from it and records each invocation as a `Step`, so credit,
payloads and GRSE checks see the same records as for the built-in teams.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.graph import END, START, StateGraph

from grse_graph.errors import ConfigError, GrseError
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.answer import extract_answer
from grse_graph.team.graph import input_ref
from grse_graph.team.spec import AgentSpec, TeamSpec
from grse_graph.team.state import TeamState
from grse_graph.team.topology import TOPOLOGIES, AgentNodeFactory, OpeningTurn, TopologyRegistry

from .middleware import SkillLibraryMiddleware
from .recording import TEAM_RUN_KEY, TeamRun, final_text

GRAPH_TOPOLOGY = "graph"
GRAPH_NODE = "graph"
# create_agent spends about two graph steps per model call plus its hooks; several agents and
# a few tool calls each stay well inside this.
DEFAULT_RECURSION_LIMIT = 100

InputBuilder = Callable[[str, TaskQuestion], Any]
AnswerReader = Callable[[Any], str]


class GraphTeamError(GrseError):
    """A graph team's run did not produce what a rollout needs (steps, an answer)."""


def messages_input(task_input: str, question: TaskQuestion) -> dict[str, Any]:
    """The default graph input: the task input as one user message under `messages`."""
    return {"messages": [HumanMessage(content=task_input)]}


def last_message_answer(result: Any) -> str:
    """The default answer: the last AI message of the graph's `messages` output."""
    messages = result.get("messages") if isinstance(result, Mapping) else None
    if not messages:
        raise GraphTeamError(
            "the graph's output has no `messages`; pass read_answer= to graph_team"
        )
    return final_text(messages)


@dataclass(frozen=True)
class GraphTopology:
    """Runs a compiled graph of your own agents as the team.

    `make_input(task_input, question)` builds the graph's input and `read_answer(output)`
    reads the team's answer from the graph's output (the `Answer:` line is extracted as for the
    built-in teams). With `use_team_model` the rollout's actor model (its sampling, seed and
    token accounting) replaces your agents' models inside a rollout.
    """

    graph: Runnable[Any, Any]
    name: str = GRAPH_TOPOLOGY
    make_input: InputBuilder = messages_input
    read_answer: AnswerReader = last_message_answer
    use_team_model: bool = True
    recursion_limit: int = DEFAULT_RECURSION_LIMIT

    def opening(self, spec: TeamSpec) -> OpeningTurn | None:
        # Nothing to presample: which agent calls the model first is up to the graph.
        return None

    def build(self, spec: TeamSpec, make_node: AgentNodeFactory) -> StateGraph:
        task = make_node.task
        topology = self

        async def node(state: TeamState, config: RunnableConfig) -> dict[str, Any]:
            question = state.question
            task_input = task.render_input(question)
            model = make_node.actor_model() if topology.use_team_model else None
            run = TeamRun(
                spec.libraries(), model=model, task_input=task_input, input_ref=input_ref(question)
            )
            child = merge_configs(
                config,
                {"configurable": {TEAM_RUN_KEY: run}, "recursion_limit": topology.recursion_limit},
            )
            output = await topology.graph.ainvoke(topology.make_input(task_input, question), child)
            unfinished = run.log.unfinished()
            if unfinished:
                raise GraphTeamError(f"agent run(s) of {', '.join(unfinished)} never finished")
            steps = run.log.steps()
            if not steps:
                raise GraphTeamError(
                    "the graph ran no agent with a SkillLibraryMiddleware: nothing to credit"
                )
            unknown = sorted({s.agent for s in steps} - set(spec.agent_names))
            if unknown:
                raise GraphTeamError(
                    f"agent {unknown[0]!r} ran in the graph but is not in the team "
                    f"(agents: {', '.join(spec.agent_names)})"
                )
            return {
                "outputs": {step.agent: step.output for step in steps},
                "steps": steps,
                "answer": extract_answer(topology.read_answer(output)),
            }

        graph = StateGraph(TeamState)
        graph.add_node(GRAPH_NODE, node)
        graph.add_edge(START, GRAPH_NODE)
        graph.add_edge(GRAPH_NODE, END)
        return graph


def graph_team(
    graph: Runnable[Any, Any],
    middlewares: Sequence[SkillLibraryMiddleware],
    *,
    make_input: InputBuilder = messages_input,
    read_answer: AnswerReader = last_message_answer,
    use_team_model: bool = True,
    topologies: TopologyRegistry = TOPOLOGIES,
) -> TeamSpec:
    """A `TeamSpec` that runs `graph`, whose agents carry `middlewares` (one per agent).

    The spec's agents are the middlewares' agents in the given order, each with its library
    and skill mode; the role text stays in your agents (`role` is empty here). Everything that
    takes a `TeamSpec` (`run_rollout`, `run_evaluation`, `TrainingDeps(team=...)`) takes it.
    """
    if not middlewares:
        raise ConfigError("graph_team needs the SkillLibraryMiddleware of at least one agent")
    for middleware in middlewares:
        if not isinstance(middleware, SkillLibraryMiddleware):
            raise ConfigError(
                "graph_team takes SkillLibraryMiddleware instances, "
                f"not {type(middleware).__name__}"
            )
    agents = tuple(
        AgentSpec(name=m.agent, role="", library=m.library, skill_mode=m.mode, max_tool_calls=0)
        for m in middlewares
    )
    topology = GraphTopology(
        graph=graph, make_input=make_input, read_answer=read_answer, use_team_model=use_team_model
    )
    return TeamSpec(
        agents=agents, topology=topology.name, topologies=topologies.with_topology(topology)
    )
