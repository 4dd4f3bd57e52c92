"""The team graph: agents in sequence, hand-off, tool loop, skills, recording, scoring."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from grse_graph.llm.provider import SamplingSettings
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.team import AgentSpec, TeamSpec, build_team_graph, run_rollout
from grse_graph.team.rollout import Rollout
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.team.team_fakes import FakeTask, question


class ToolChoiceModel(ScriptedChatModel):
    """Records the `tool_choice` of every `bind_tools` call."""

    tool_choices: list[Any] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolChoiceModel:  # type: ignore[override]
        self.tool_choices.append(kwargs.get("tool_choice"))
        return self


class FailingModel(ScriptedChatModel):
    """Fails like an unreachable endpoint."""

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("endpoint unreachable")


def agent(name: str, *, skills: Sequence[Skill] = (), **fields: Any) -> AgentSpec:
    return AgentSpec(
        name=name,
        role=f"You are {name}.",
        library=SkillLibrary.build(name, skills),
        **fields,
    )


def skill(name: str, body: str) -> Skill:
    return Skill.build(name=name, description=f"How to {name}.", body=body)


def rollout(spec: TeamSpec, task: FakeTask, model: ScriptedChatModel, qid: str = "q1") -> Rollout:
    q = next(q for q in task.split("test") if q.id == qid)
    return asyncio.run(
        run_rollout(
            spec,
            task,
            q,
            FakeProvider(models={"actor": model}),
            sampling=SamplingSettings(seed=7),
            rollout_id="r-1",
            group_index=2,
        )
    )


def human_text(messages: Sequence[Any]) -> str:
    return next(str(m.content) for m in messages if isinstance(m, HumanMessage))


def system_text(messages: Sequence[Any]) -> str:
    return next(str(m.content) for m in messages if isinstance(m, SystemMessage))


def test_two_agents_run_in_order_and_second_sees_first() -> None:
    task = FakeTask([question("q1")])
    model = ScriptedChatModel(["Bridge entity: Aster Vey (Passage 1).", "Answer: Osterlin"])
    spec = TeamSpec(agents=(agent("retriever"), agent("reasoner")))

    result = rollout(spec, task, model)

    assert [s.agent for s in result.steps] == ["retriever", "reasoner"]
    assert [s.index for s in result.steps] == [0, 1]
    assert "Bridge entity: Aster Vey" not in human_text(model.calls[0])
    assert "Bridge entity: Aster Vey (Passage 1)." in human_text(model.calls[1])
    assert result.steps[1].input == human_text(model.calls[1])
    assert result.steps[0].input_ref == "question:q1:input"
    assert result.answer == "Osterlin"
    assert (result.reward, result.metrics) == (1.0, {"f1": 1.0, "em": 1.0})
    assert (result.rollout_id, result.group_index, result.seed) == ("r-1", 2, 7)


def test_three_agents_each_see_all_earlier_responses() -> None:
    task = FakeTask([question("q1", answer="Tamsford")])
    model = ScriptedChatModel(["first note", "second note", "Answer: Tamsford"])
    spec = TeamSpec(agents=(agent("a"), agent("b"), agent("c")))

    result = rollout(spec, task, model)

    assert [s.agent for s in result.steps] == ["a", "b", "c"]
    third_input = human_text(model.calls[2])
    assert "## Response of a\nfirst note" in third_input
    assert "## Response of b\nsecond note" in third_input
    assert third_input.index("first note") < third_input.index("second note")
    assert result.reward == 1.0


def test_graph_state_holds_outputs_per_agent() -> None:
    task = FakeTask([question("q1")])
    model = ScriptedChatModel(["one", "Answer: two"])
    spec = TeamSpec(agents=(agent("a"), agent("b")))
    graph = build_team_graph(
        spec, task, FakeProvider(models={"actor": model}), sampling=SamplingSettings()
    )

    state = asyncio.run(graph.ainvoke({"question": task.split("test")[0]}))

    assert state["outputs"] == {"a": "one", "b": "Answer: two"}
    assert state["answer"] == "two"
    assert graph.checkpointer is None


def test_tool_loop_records_calls_and_results_and_stops_at_limit() -> None:
    task = FakeTask([question("q1", tools=True)])
    model = ScriptedChatModel(
        [
            tool_call_message("search", {"query": "founder"}, "c1"),
            tool_call_message("search", {"query": "Aster"}, "c2"),
            tool_call_message("search", {"query": "born"}, "c3"),
            "Evidence: [D1:1]",
            "Answer: Osterlin",
        ]
    )
    spec = TeamSpec(agents=(agent("retriever", max_tool_calls=3), agent("reasoner")))

    result = rollout(spec, task, model)

    first = result.steps[0]
    assert [c.arguments for c in first.tool_calls] == [
        {"query": "founder"},
        {"query": "Aster"},
        {"query": "born"},
    ]
    assert first.tool_calls[1].result == "[D1:2] result for Aster"
    assert first.output == "Evidence: [D1:1]"
    assert first.usage.model_calls == 4
    assert task.tool_queries == ["founder", "Aster", "born"]
    # The tool result reached the model as a tool message before the next call.
    assert "[D1:1] result for founder" in [str(m.content) for m in model.calls[1]]
    # The replayed tool-calling message carries a non-empty content (llama-cpp-python's server
    # rejects a null assistant content).
    replayed = model.calls[1][2]
    assert isinstance(replayed, AIMessage) and replayed.tool_calls and replayed.content == " "
    assert result.answer == "Osterlin"


def test_calls_beyond_the_limit_are_refused_and_recorded() -> None:
    task = FakeTask([question("q1", tools=True)])
    two_calls = AIMessage(
        content="",
        tool_calls=[
            {"name": "search", "args": {"query": "x"}, "id": "c1"},
            {"name": "search", "args": {"query": "y"}, "id": "c2"},
        ],
    )
    # After the budget is spent the last model call is made without tools; a model that still
    # asks for a tool there ends the turn with its text.
    model = ScriptedChatModel([two_calls, tool_call_message("search", {"query": "z"}), "Answer: a"])
    spec = TeamSpec(agents=(agent("retriever", max_tool_calls=1),))

    result = rollout(spec, task, model)

    calls = result.steps[0].tool_calls
    assert [(c.arguments["query"], c.error) for c in calls] == [
        ("x", None),
        ("y", "tool call limit reached"),
    ]
    assert task.tool_queries == ["x"]
    assert result.steps[0].usage.model_calls == 2


def test_unknown_tool_is_recorded_as_error() -> None:
    task = FakeTask([question("q1", tools=True)])
    model = ScriptedChatModel([tool_call_message("browse", {"url": "u"}), "Answer: Osterlin"])
    spec = TeamSpec(agents=(agent("retriever", max_tool_calls=2),))

    result = rollout(spec, task, model)

    assert result.steps[0].tool_calls[0].error == "unknown tool 'browse'"
    assert result.answer == "Osterlin"


def test_agent_without_tools_gets_no_tool_loop() -> None:
    task = FakeTask([question("q1", tools=True)])
    model = ScriptedChatModel(["e", "Answer: Osterlin"])
    spec = TeamSpec(agents=(agent("retriever", max_tool_calls=0), agent("reasoner")))

    result = rollout(spec, task, model)

    assert result.steps[0].tool_calls == []
    assert len(model.calls) == 2


def test_forced_first_tool_call_then_free_choice() -> None:
    task = FakeTask([question("q1", tools=True)])
    model = ToolChoiceModel(
        [tool_call_message("search", {"query": "a"}), "evidence", "Answer: Osterlin"]
    )
    spec = TeamSpec(
        agents=(agent("retriever", max_tool_calls=3, force_first_tool=True), agent("reasoner"))
    )

    rollout(spec, task, model)

    assert model.tool_choices == ["required", None]


def test_reasoner_sees_tool_results_when_configured() -> None:
    task = FakeTask([question("q1", tools=True)])
    model = ScriptedChatModel(
        [tool_call_message("search", {"query": "born"}), "evidence list", "Answer: Osterlin"]
    )
    spec = TeamSpec(
        agents=(
            agent("retriever", max_tool_calls=1),
            agent("reasoner", sees_tool_results=True),
        )
    )

    result = rollout(spec, task, model)

    second_input = result.steps[1].input
    assert "## Tool results of retriever\nsearch(query='born'):\n[D1:1] result for born" in (
        second_input
    )
    assert second_input.index("Tool results") < second_input.index("## Response of retriever")


def test_inline_skills_in_system_prompt_and_not_counted_as_invoked() -> None:
    task = FakeTask([question("q1")])
    model = ScriptedChatModel(["Answer: Osterlin"])
    library_skills = [skill("cite-passages", "Cite every passage you use.")]
    spec = TeamSpec(agents=(agent("reasoner", skills=library_skills),))

    result = rollout(spec, task, model)

    step = result.steps[0]
    assert "## Skills" in step.system_prompt
    assert "Cite every passage you use." in system_text(model.calls[0])
    assert step.skills_present == ["cite-passages"]
    assert step.skills_invoked == []


def test_tool_mode_records_skill_loads() -> None:
    task = FakeTask([question("q1")])
    library_skills = [
        skill("cite-passages", "Cite every passage."),
        skill("short-answer", "Be brief."),
    ]
    model = ScriptedChatModel(
        [tool_call_message("load_skill", {"name": "short-answer"}), "Answer: Osterlin"]
    )
    spec = TeamSpec(agents=(agent("reasoner", skills=library_skills, skill_mode="tool"),))

    result = rollout(spec, task, model)

    step = result.steps[0]
    assert "Be brief." not in step.system_prompt
    assert "short-answer: How to short-answer." in step.system_prompt
    assert step.skills_present == ["cite-passages", "short-answer"]
    assert step.skills_invoked == ["short-answer"]
    assert step.tool_calls[0].name == "load_skill"
    assert "Be brief." in step.tool_calls[0].result
    assert result.answer == "Osterlin"


def test_mixed_task_picks_role_per_question() -> None:
    task = FakeTask([question("p"), question("c", tools=True)], kind="mixed")
    first = agent(
        "retriever",
        role_by_kind={"passages": "READ PASSAGES", "conversation": "SEARCH CONVERSATION"},
        max_tool_calls=1,
    )
    spec = TeamSpec(agents=(first,))

    passages = rollout(spec, task, ScriptedChatModel(["Answer: x"]), qid="p")
    conversation = rollout(spec, task, ScriptedChatModel(["Answer: x"]), qid="c")

    assert passages.steps[0].system_prompt == "READ PASSAGES"
    assert conversation.steps[0].system_prompt == "SEARCH CONVERSATION"


def test_rollout_scores_a_wrong_answer_zero() -> None:
    task = FakeTask([question("q1")])
    result = rollout(TeamSpec(agents=(agent("a"),)), task, ScriptedChatModel(["Answer: Paris"]))
    assert (result.answer, result.reward, result.metrics["f1"]) == ("Paris", 0.0, 0.0)


def test_model_errors_propagate() -> None:
    task = FakeTask([question("q1")])
    with pytest.raises(ConnectionError, match="endpoint unreachable"):
        rollout(TeamSpec(agents=(agent("a"),)), task, FailingModel([]))


def test_usage_is_recorded_per_step() -> None:
    task = FakeTask([question("q1")])
    reply = AIMessage(
        content="Answer: Osterlin",
        usage_metadata={
            "input_tokens": 120,
            "output_tokens": 5,
            "total_tokens": 125,
            "input_token_details": {"cache_read": 100},
        },
    )
    result = rollout(TeamSpec(agents=(agent("a"),)), task, ScriptedChatModel([reply]))
    usage = result.steps[0].usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens) == (
        120,
        5,
        100,
    )
    assert usage.model_calls == 1
