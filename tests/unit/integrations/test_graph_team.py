"""graph_team: a user-written StateGraph of two create_agent agents as a team, with fake models."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from grse_graph.errors import ConfigError
from grse_graph.integrations import GraphTeamError, SkillLibraryMiddleware, graph_team
from grse_graph.llm.provider import SamplingSettings
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.team import Rollout, TeamSpec, run_rollout, sample_openings
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.team.team_fakes import FakeTask, question


class Pipeline(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    evidence: str


@tool
def lookup(term: str) -> str:
    """Look a term up in the notes."""
    return f"notes on {term}: born in Osterlin"


def libraries() -> tuple[SkillLibrary, SkillLibrary]:
    retriever = SkillLibrary.build(
        "retriever",
        [Skill.build(name="find-bridge", description="Find the bridge.", body="Name the entity.")],
    )
    reasoner = SkillLibrary.build(
        "reasoner",
        [Skill.build(name="short-answer", description="Answer briefly.", body="One span only.")],
    )
    return retriever, reasoner


def users_graph(own_model: ScriptedChatModel, *, sync: bool = False) -> tuple[Any, TeamSpec]:
    """What a user writes: two agents with the middleware, wired in their own StateGraph."""
    retriever_skills, reasoner_skills = libraries()
    retriever_mw = SkillLibraryMiddleware(retriever_skills, mode="tool")
    reasoner_mw = SkillLibraryMiddleware(reasoner_skills)
    retriever = create_agent(
        own_model, tools=[lookup], system_prompt="You find evidence.", middleware=[retriever_mw]
    )
    reasoner = create_agent(own_model, system_prompt="You answer.", middleware=[reasoner_mw])

    def reasoner_input(state: Pipeline) -> dict[str, Any]:
        note = HumanMessage(content=f"Evidence: {state['evidence']}")
        return {"messages": [*state["messages"], note]}

    async def retrieve(state: Pipeline) -> dict[str, Any]:
        out = await retriever.ainvoke({"messages": state["messages"]})
        return {"evidence": out["messages"][-1].text}

    async def reason(state: Pipeline) -> dict[str, Any]:
        out = await reasoner.ainvoke(reasoner_input(state))
        return {"messages": [out["messages"][-1]]}

    def retrieve_sync(state: Pipeline) -> dict[str, Any]:
        out = retriever.invoke({"messages": state["messages"]})
        return {"evidence": out["messages"][-1].text}

    def reason_sync(state: Pipeline) -> dict[str, Any]:
        out = reasoner.invoke(reasoner_input(state))
        return {"messages": [out["messages"][-1]]}

    builder = StateGraph(Pipeline)
    builder.add_node("retrieve", retrieve_sync if sync else retrieve)
    builder.add_node("reason", reason_sync if sync else reason)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "reason")
    builder.add_edge("reason", END)
    graph = builder.compile()
    return graph, graph_team(graph, [retriever_mw, reasoner_mw])


def team_script() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            tool_call_message("load_skill", {"name": "find-bridge"}, "k"),
            tool_call_message("lookup", {"term": "Aster Vey"}, "l"),
            "Evidence: Aster Vey was born in Osterlin.",
            "Answer: Osterlin",
        ]
    )


def rollout(team: TeamSpec, actor: ScriptedChatModel, task: FakeTask) -> Rollout:
    return asyncio.run(
        run_rollout(
            team,
            task,
            task.split("test")[0],
            FakeProvider(models={"actor": actor}),
            sampling=SamplingSettings(seed=1),
            rollout_id="r",
        )
    )


@pytest.mark.parametrize("sync", [False, True], ids=["async-nodes", "sync-nodes"])
def test_each_agents_messages_and_tool_calls_become_steps(sync: bool) -> None:
    own_model = ScriptedChatModel([])
    task = FakeTask([question("q1")])
    _, team = users_graph(own_model, sync=sync)
    actor = team_script()

    result = rollout(team, actor, task)

    assert team.agent_names == ["retriever", "reasoner"]
    assert [s.agent for s in result.steps] == ["retriever", "reasoner"]
    assert [s.index for s in result.steps] == [0, 1]
    retriever, reasoner = result.steps
    assert retriever.input == task.render_input(task.split("test")[0])
    assert retriever.input_ref == "question:q1:input"
    assert retriever.system_prompt.startswith("You find evidence.\n\n## Skills")
    assert [c.name for c in retriever.tool_calls] == ["load_skill", "lookup"]
    assert retriever.tool_calls[0].result == "# Skill: find-bridge\n\nName the entity."
    assert retriever.tool_calls[1].result == "notes on Aster Vey: born in Osterlin"
    assert (retriever.skills_present, retriever.skills_invoked) == (
        ["find-bridge"],
        ["find-bridge"],
    )
    assert retriever.output == "Evidence: Aster Vey was born in Osterlin."
    assert retriever.usage.model_calls == 3
    assert "### short-answer\nOne span only." in reasoner.system_prompt
    assert (reasoner.skills_present, reasoner.skills_invoked) == (["short-answer"], [])
    assert "Evidence: Evidence: Aster Vey was born in Osterlin." in reasoner.input
    assert (result.answer, result.reward) == ("Osterlin", 1.0)
    # The rollout's actor replaced the agents' own model.
    assert own_model.calls == [] and len(actor.calls) == 4


def test_the_rollouts_libraries_replace_the_middlewares_own() -> None:
    _, team = users_graph(ScriptedChatModel([]))
    evolved = SkillLibrary.build(
        "reasoner",
        [Skill.build(name="cite-ids", description="Cite ids.", body="Cite every dialogue id.")],
    )
    task = FakeTask([question("q1")])

    result = rollout(team.with_library("reasoner", evolved), team_script(), task)

    reasoner = result.steps[1]
    assert "Cite every dialogue id." in reasoner.system_prompt
    assert "One span only." not in reasoner.system_prompt
    assert reasoner.skills_present == ["cite-ids"]


def test_the_agents_own_model_serves_when_the_team_model_is_off() -> None:
    own_model = team_script()
    graph, team = users_graph(own_model)
    mine = graph_team(graph, [_mw(team, "retriever"), _mw(team, "reasoner")], use_team_model=False)
    actor = ScriptedChatModel([])

    result = rollout(mine, actor, FakeTask([question("q1")]))

    assert result.answer == "Osterlin"
    assert actor.calls == [] and len(own_model.calls) == 4


def _mw(team: TeamSpec, agent: str) -> SkillLibraryMiddleware:
    spec = team.agent(agent)
    return SkillLibraryMiddleware(spec.library, mode=spec.skill_mode)


def test_a_graph_team_has_no_opening_to_presample() -> None:
    _, team = users_graph(ScriptedChatModel([]))
    task = FakeTask([question("q1")])
    actor = ScriptedChatModel([])

    replies = asyncio.run(
        sample_openings(
            team,
            task,
            task.split("test")[0],
            FakeProvider(models={"actor": actor}),
            sampling=SamplingSettings(),
            n=4,
        )
    )

    assert replies == [] and actor.calls == []
    assert team.opening_turn() is None


def test_a_graph_without_middleware_agents_is_an_error() -> None:
    def answer(state: Pipeline) -> dict[str, Any]:
        return {"messages": [AIMessage(content="Answer: Osterlin")]}

    builder = StateGraph(Pipeline)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    retriever, _ = libraries()
    team = graph_team(builder.compile(), [SkillLibraryMiddleware(retriever)])

    with pytest.raises(GraphTeamError, match="ran no agent with a SkillLibraryMiddleware"):
        rollout(team, ScriptedChatModel([]), FakeTask([question("q1")]))


def test_graph_team_refuses_no_or_foreign_middleware() -> None:
    with pytest.raises(ConfigError, match="at least one agent"):
        graph_team(object(), [])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not object"):
        graph_team(object(), [object()])  # type: ignore[arg-type, list-item]
