"""Team topologies: sequential, centralized, hybrid and one of your own, with fake models."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from pydantic import ValidationError

from grse_graph.errors import ConfigError
from grse_graph.llm.provider import SamplingSettings
from grse_graph.methods.grse.checks import CheckContext
from grse_graph.methods.grse.payload import build_critic_payload
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.team import (
    TOPOLOGIES,
    TOPOLOGY_NAMES,
    AgentNodeFactory,
    AgentSpec,
    OpeningTurn,
    PresampledReply,
    Rollout,
    StepUsage,
    TeamSpec,
    TeamState,
    build_team_graph,
    default_team,
    run_rollout,
    sample_openings,
)
from grse_graph.team.graph import first_turn_input
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.team.team_fakes import FakeTask, question


class ToolChoiceModel(ScriptedChatModel):
    """Records the `tool_choice` and the tool names of every `bind_tools` call."""

    tool_choices: list[Any] = []  # noqa: RUF012 - a pydantic field, copied per instance
    offered: list[list[str]] = []  # noqa: RUF012

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolChoiceModel:  # type: ignore[override]
        self.tool_choices.append(kwargs.get("tool_choice"))
        self.offered.append([t.name for t in tools])
        return self


def agent(name: str, *, skills: Sequence[Skill] = (), **fields: Any) -> AgentSpec:
    return AgentSpec(
        name=name, role=f"You are {name}.", library=SkillLibrary.build(name, skills), **fields
    )


def team(topology: str, *, sees_tool_results: bool = False, **first: Any) -> TeamSpec:
    return TeamSpec(
        agents=(
            agent("retriever", **first),
            agent("reasoner", tools=(), max_tool_calls=0, sees_tool_results=sees_tool_results),
        ),
        topology=topology,
    )


def run(spec: TeamSpec, task: FakeTask, model: ScriptedChatModel, **kwargs: Any) -> Rollout:
    return asyncio.run(
        run_rollout(
            spec,
            task,
            task.split("test")[0],
            FakeProvider(models={"actor": model}),
            sampling=SamplingSettings(seed=3),
            rollout_id="r",
            **kwargs,
        )
    )


def texts(messages: Sequence[Any], kind: type) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, kind)]


def ask(request: str, call_id: str = "c1") -> AIMessage:
    return tool_call_message("ask_retriever", {"request": request}, call_id)


def test_builtin_topologies_are_registered() -> None:
    assert TOPOLOGY_NAMES == ("sequential", "centralized", "hybrid")
    assert default_team(FakeTask([question("q")]), topology="hybrid").topology == "hybrid"
    with pytest.raises(ConfigError, match="unknown team topology 'star'"):
        default_team(FakeTask([question("q")]), topology="star")


@pytest.mark.parametrize("topology", TOPOLOGY_NAMES)
def test_each_topology_compiles_runs_and_records_every_agents_steps(topology: str) -> None:
    task = FakeTask([question("q1")])
    # Sequential: retriever, then reasoner. Delegating: the reasoner asks once, then answers.
    replies: list[AIMessage | str] = (
        ["Bridge: Aster Vey.", "Answer: Osterlin"]
        if topology == "sequential"
        else [
            ask("Where was Aster Vey born?"),
            "Aster Vey was born in Osterlin.",
            "Answer: Osterlin",
        ]
    )
    spec = team(topology)
    graph = build_team_graph(
        spec,
        task,
        FakeProvider(models={"actor": ScriptedChatModel([])}),
        sampling=SamplingSettings(),
    )
    assert graph.checkpointer is None

    result = run(spec, task, ScriptedChatModel(replies))

    assert [s.agent for s in result.steps] == ["retriever", "reasoner"]
    assert [s.index for s in result.steps] == [0, 1]
    assert all(s.usage.model_calls >= 1 for s in result.steps)
    assert {s.agent for s in result.steps} == set(spec.agent_names)
    assert (result.answer, result.reward) == ("Osterlin", 1.0)


def test_centralized_main_sees_only_the_question_and_the_sub_agent_a_fresh_context() -> None:
    task = FakeTask([question("q1")])
    model = ScriptedChatModel(
        [ask("Who founded q1 and where was that person born?"), "Osterlin.", "Answer: Osterlin"]
    )

    result = run(team("centralized"), task, model)

    retriever, reasoner = result.steps
    main_first, sub_call, _ = model.calls
    assert texts(main_first, HumanMessage) == ["Question: Where was the founder of q1 born?"]
    assert "ask_retriever" in texts(main_first, SystemMessage)[0]
    assert reasoner.input == "Question: Where was the founder of q1 born?"
    assert reasoner.input_ref is None
    assert texts(sub_call, SystemMessage) == ["You are retriever."]
    assert retriever.input == texts(sub_call, HumanMessage)[0]
    assert retriever.input.startswith(task.render_input(task.split("test")[0]))
    assert retriever.input.endswith(
        "## Request of reasoner\nWho founded q1 and where was that person born?"
    )
    assert retriever.input_ref == "question:q1:input"
    (call,) = reasoner.tool_calls
    assert call.name == "ask_retriever"
    assert call.result == "## Response of retriever\nOsterlin."


def test_hybrid_sub_agent_calls_see_the_earlier_exchanges() -> None:
    task = FakeTask([question("q1")])
    model = ScriptedChatModel(
        [
            ask("Who founded q1?"),
            "Aster Vey.",
            ask("Where was Aster Vey born?", "c2"),
            "In Osterlin.",
            "Answer: Osterlin",
        ]
    )

    result = run(team("hybrid"), task, model)

    assert [s.agent for s in result.steps] == ["retriever", "retriever", "reasoner"]
    assert [s.index for s in result.steps] == [0, 1, 2]
    first, second, main = result.steps
    assert "Earlier request" not in first.input
    assert second.input.index("## Earlier request of reasoner to retriever\nWho founded q1?") < (
        second.input.index("## Request of reasoner\nWhere was Aster Vey born?")
    )
    assert "## Response of retriever\nAster Vey." in second.input
    assert [c.name for c in main.tool_calls] == ["ask_retriever", "ask_retriever"]
    assert result.answer == "Osterlin"


def test_centralized_sub_agent_calls_are_isolated() -> None:
    task = FakeTask([question("q1")])
    model = ScriptedChatModel(
        [ask("REQUEST-A"), "RESPONSE-A", ask("REQUEST-B", "c2"), "RESPONSE-B", "Answer: Osterlin"]
    )

    result = run(team("centralized"), task, model)

    second = result.steps[1].input
    assert "REQUEST-B" in second
    assert "REQUEST-A" not in second and "RESPONSE-A" not in second


def test_delegation_budget_is_capped_and_the_main_agent_must_answer() -> None:
    task = FakeTask([question("q1")])
    model = ToolChoiceModel([ask("a"), "r1", ask("b", "c2"), "r2", "Answer: Osterlin"])

    result = run(team("centralized"), task, model)

    # max_calls = 2: two sub-agent steps; the main agent's third call is offered no tools.
    assert [s.agent for s in result.steps] == ["retriever", "retriever", "reasoner"]
    assert model.offered == [["ask_retriever"], ["ask_retriever"]]
    assert len(model.calls) == 5
    assert result.answer == "Osterlin"


def test_main_agents_first_call_is_forced_to_delegate() -> None:
    task = FakeTask([question("q1")])
    model = ToolChoiceModel([ask("q"), "r", "Answer: Osterlin"])

    run(team("centralized"), task, model)

    assert model.tool_choices[0] == "required"
    assert model.offered[0] == ["ask_retriever"]


def test_sub_agent_uses_its_task_tools_and_the_main_agent_reads_their_results() -> None:
    task = FakeTask([question("q1", tools=True)], kind="conversation")
    model = ScriptedChatModel(
        [
            ask("find the birthplace"),
            tool_call_message("search", {"query": "Aster"}, "s1"),
            "Evidence: [D1:1].",
            "Answer: Osterlin",
        ]
    )

    result = run(team("centralized", sees_tool_results=True, max_tool_calls=2), task, model)

    retriever, reasoner = result.steps
    assert [c.name for c in retriever.tool_calls] == ["search"]
    assert task.tool_queries == ["Aster"]
    assert "## Tool results of retriever\nsearch(query='Aster'):\n[D1:1] result for Aster" in (
        reasoner.tool_calls[0].result
    )


def test_sub_agent_skill_loads_are_recorded_on_its_step() -> None:
    task = FakeTask([question("q1")])
    library_skill = Skill.build(name="find-bridge", description="Find it.", body="Name it.")
    spec = TeamSpec(
        agents=(
            agent("retriever", skills=[library_skill], skill_mode="tool"),
            agent("reasoner", tools=(), max_tool_calls=0),
        ),
        topology="centralized",
    )
    model = ScriptedChatModel(
        [
            ask("bridge?"),
            tool_call_message("load_skill", {"name": "find-bridge"}, "k1"),
            "Aster Vey.",
            "Answer: Osterlin",
        ]
    )

    result = run(spec, task, model)

    retriever, reasoner = result.steps
    assert retriever.skills_present == ["find-bridge"]
    assert retriever.skills_invoked == ["find-bridge"]
    assert reasoner.skills_invoked == []


def test_opening_of_a_delegating_team_is_the_main_agents_turn() -> None:
    task = FakeTask([question("q1")])
    q = task.split("test")[0]
    turn = first_turn_input(team("centralized"), task, q)
    assert turn is not None
    assert (turn.agent, turn.user_input) == (
        "reasoner",
        "Question: Where was the founder of q1 born?",
    )
    assert [t.name for t in turn.task_tools] == ["ask_retriever"]

    opening = PresampledReply(message=ask("born where?"), usage=StepUsage(model_calls=1))
    model = ScriptedChatModel(["Osterlin.", "Answer: Osterlin"])
    result = run(team("centralized"), task, model, opening=opening)

    assert [s.agent for s in result.steps] == ["retriever", "reasoner"]
    assert len(model.calls) == 2  # the presampled reply replaced the main agent's first call
    assert result.steps[0].input.endswith("## Request of reasoner\nborn where?")


def test_sample_openings_of_a_delegating_team_uses_the_main_agents_prompt() -> None:
    task = FakeTask([question("q1")])
    model = ScriptedChatModel([ask("x")])
    replies = asyncio.run(
        sample_openings(
            team("hybrid"),
            task,
            task.split("test")[0],
            FakeProvider(models={"actor": model}),
            sampling=SamplingSettings(),
            n=2,
        )
    )
    assert len(replies) == 1
    assert texts(model.calls[0], HumanMessage) == ["Question: Where was the founder of q1 born?"]


def test_a_delegating_topology_needs_two_agents() -> None:
    with pytest.raises(ConfigError, match="needs at least two agents"):
        build_team_graph(
            TeamSpec(agents=(agent("solo"),), topology="centralized"),
            FakeTask([question("q")]),
            FakeProvider(models={"actor": ScriptedChatModel([])}),
            sampling=SamplingSettings(),
        )


@dataclass(frozen=True)
class ReversedTopology:
    """A topology of one's own: agents in reverse order, the first agent answers."""

    name: str = "reversed"

    def build(self, spec: TeamSpec, make_node: AgentNodeFactory) -> StateGraph:
        graph = StateGraph(TeamState)
        previous = START
        agents = list(enumerate(spec.agents))[::-1]
        for position, a in agents:
            graph.add_node(a.name, make_node(a, position, final=position == 0))
            graph.add_edge(previous, a.name)
            previous = a.name
        graph.add_edge(previous, END)
        return graph

    def opening(self, spec: TeamSpec) -> OpeningTurn | None:
        return OpeningTurn(agent=spec.agents[-1].name)


def test_a_registered_topology_of_your_own_runs_like_a_builtin_one() -> None:
    registry = TOPOLOGIES.with_topology(ReversedTopology())
    spec = TeamSpec(
        agents=(agent("retriever"), agent("reasoner")), topology="reversed", topologies=registry
    )
    task = FakeTask([question("q1")])

    result = run(
        spec.with_library("reasoner", SkillLibrary.empty("reasoner")),
        task,
        ScriptedChatModel(["note", "Answer: Osterlin"]),
    )

    assert [s.agent for s in result.steps] == ["reasoner", "retriever"]
    assert result.reward == 1.0
    assert "reversed" not in TOPOLOGIES
    assert spec.with_topology("sequential").topologies is registry


def test_topology_registry_refuses_unknown_names_duplicates_and_non_topologies() -> None:
    with pytest.raises(ValidationError, match="unknown team topology 'reversed'"):
        TeamSpec(agents=(agent("a"),), topology="reversed")
    with pytest.raises(ConfigError, match="registered twice"):
        TOPOLOGIES.with_topology(ReversedTopology(name="sequential"))
    with pytest.raises(ConfigError, match="is not a team topology"):
        TOPOLOGIES.with_topology(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown team topology 'star'"):
        team("sequential").with_topology("star")


def test_agent_spec_refuses_unknown_arguments_loudly() -> None:
    with pytest.raises(ValidationError, match="AgentSpec takes no `agent`"):
        AgentSpec(name="a", role="r", library=SkillLibrary.empty("a"), agent=object())  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="extra"):
        AgentSpec(name="a", role="r", library=SkillLibrary.empty("a"), model="gpt")  # type: ignore[call-arg]


def test_credit_reads_every_agents_steps_of_a_delegating_rollout() -> None:
    # GRSE's payload labels and check facts are per step, each naming its agent, so a rollout
    # with two sub-agent calls is credited like a sequential one.
    task = FakeTask([question("q1")])
    model = ScriptedChatModel(
        [ask("REQUEST-A"), "RESPONSE-A", ask("REQUEST-B", "c2"), "RESPONSE-B", "Answer: x"]
    )
    spec = team("hybrid")
    result = run(spec, task, model)

    payload = build_critic_payload(task.split("test")[0], spec.libraries(), [result], [0.0])
    context = CheckContext.build([result], {a: [] for a in spec.agent_names})

    assert "[r1.s1] agent=retriever" in payload.text
    assert "[r1.s2] agent=retriever" in payload.text
    assert "[r1.s3] agent=reasoner" in payload.text
    assert [context.steps[(1, j)].agent for j in (1, 2, 3)] == [
        "retriever",
        "retriever",
        "reasoner",
    ]
