"""The ``text`` tool protocol: a retriever turn whose `<grep>` calls the environment runs, on
the fake chat model; and how a team, a config and the demo select it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool

from grse_graph.errors import ConfigError
from grse_graph.evaluation.answerer import TeamAnswerer
from grse_graph.llm.provider import SamplingSettings
from grse_graph.tasks.demo import load_demo
from grse_graph.tasks.locomo import LocomoTask, load_locomo
from grse_graph.team import default_team, run_rollout, sample_openings
from grse_graph.team.agent import AgentTurnInput
from grse_graph.team.graph import agent_turn_input
from grse_graph.team.rollout import Step, ToolCallRecord
from grse_graph.team.text_calls import LIMIT_REACHED, run_text_turn, tool_argument
from grse_graph.team.tool_protocols import TOOL_PROTOCOLS, TextCalls
from grse_graph.training.config import TrainConfig
from tests.fakes import FakeProvider, ScriptedChatModel

MINI = Path(__file__).parents[2] / "fixtures" / "tasks" / "locomo_mini.json"
HAND_OFF = (
    'Evidence:\n- [D1:1] (1:00 pm on 2 May, 2023) Rosa said, "I adopted a cat called Noodle."'
)


class UnboundModel(ScriptedChatModel):
    """A scripted model that fails if tools are bound to it (the text protocol binds none)."""

    def __init__(self, replies: Sequence[AIMessage | str], **kwargs: Any) -> None:
        super().__init__(replies, **kwargs)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        raise AssertionError("the text protocol must not bind tools")


def _task() -> LocomoTask:
    return load_locomo(MINI, train_conversations=1, validation_conversations=1)


def _retriever_turn(task: LocomoTask | None = None) -> AgentTurnInput:
    task = task or _task()
    question = task.split("test")[0]
    team = default_team(task, tool_protocol="text")
    turn, _ = agent_turn_input(
        task, question, team.agents[0], 0, "conversation", (), team.tool_protocols
    )
    return turn


def _run(replies: list[str], turn: AgentTurnInput | None = None) -> tuple[Step, UnboundModel]:
    model = UnboundModel(replies)
    step = asyncio.run(TOOL_PROTOCOLS["text"].run(model, turn or _retriever_turn()))
    return step, model


def _grep(query: str) -> str:
    task = _task()
    (tool,) = task.agent_tools(task.split("test")[0], "retriever", position=0)
    return str(tool.invoke({"query": query}))


def test_a_grep_call_written_as_text_is_run_and_its_result_sent_back_and_recorded() -> None:
    step, model = _run(["Searching.\n<grep>Noodle</grep>", HAND_OFF])
    assert len(model.calls) == 2
    assert model.calls[1][-2] == AIMessage(content="Searching.\n<grep>Noodle</grep>")
    sent = model.calls[1][-1]
    assert isinstance(sent, HumanMessage)
    assert sent.text.startswith("Result of <grep>Noodle</grep>:\n" + _grep("Noodle"))
    assert "Calls left: grep: 2." in sent.text
    assert step.tool_calls == [
        ToolCallRecord(name="grep", arguments={"query": "Noodle"}, result=_grep("Noodle"))
    ]
    assert step.output == HAND_OFF
    assert step.call_events == []
    assert step.usage.model_calls == 2


def test_the_system_prompt_ends_with_the_tag_instructions_and_budget() -> None:
    turn = _retriever_turn()
    function_turn, _ = agent_turn_input(
        _task(), _task().split("test")[0], default_team(_task()).agents[0], 0, "conversation", ()
    )
    assert turn.system_prompt.startswith(function_turn.system_prompt)
    added = turn.system_prompt[len(function_turn.system_prompt) :]
    assert "e.g. <grep>birthday|party</grep>:" in added
    assert "- <grep>QUERY</grep>: Search the conversation between Rosa and Milo." in added
    assert "At most 3 calls of grep run for this question" in added
    assert "## Tool calls" not in function_turn.system_prompt


def test_a_reply_without_a_call_hands_off_at_once() -> None:
    step, model = _run(["Evidence: NO_EVIDENCE"])
    assert len(model.calls) == 1
    assert step.tool_calls == [] and step.output == "Evidence: NO_EVIDENCE"


def test_only_three_calls_run_per_question_and_the_rest_are_reported_and_counted() -> None:
    replies = [
        "<grep>Noodle</grep>\n<grep>cat</grep>",
        "<grep>vase</grep> <grep>garden</grep>",
        "<grep>cello</grep>\nEvidence: [D1:1]",
    ]
    step, model = _run(replies)
    assert len(model.calls) == 3  # the reply after the budget is spent is the last
    ran = [c for c in step.tool_calls if c.error is None]
    refused = [c for c in step.tool_calls if c.error is not None]
    assert [c.arguments["query"] for c in ran] == ["Noodle", "cat", "vase"]
    assert [c.arguments["query"] for c in refused] == ["garden", "cello"]
    assert {c.error for c in refused} == {LIMIT_REACHED}
    assert [e.kind for e in step.call_events] == ["over_budget", "over_budget"]
    second = model.calls[2][-1].text
    assert "Not run: <grep>garden</grep>: the 3 calls of grep" in second
    assert "No calls are left for this question" in second
    assert step.output == "<grep>cello</grep>\nEvidence: [D1:1]"


def test_malformed_tags_are_told_counted_and_spend_no_call() -> None:
    replies = [
        "<grep>(cat</grep> <grep></grep> </grep> <grep>vase",
        "<grep>Noodle</grep>",
        HAND_OFF,
    ]
    step, model = _run(replies)
    assert [e.kind for e in step.call_events] == [
        "invalid_argument",
        "empty",
        "unopened",
        "unclosed",
    ]
    first = model.calls[1][-1].text
    assert "is not a valid regular expression, so it was searched as plain text" in first
    assert "Not run: <grep></grep> has nothing between its tags" in first
    assert "Not run: <grep>vase has no closing tag. Write a call as <grep>QUERY</grep>." in first
    assert "Calls left: grep: 2." in first  # only the invalid pattern ran
    ran = [c.arguments["query"] for c in step.tool_calls if c.error is None]
    assert ran == ["(cat", "Noodle"]
    malformed = [c for c in step.tool_calls if c.error is not None]
    assert [c.arguments["written"] for c in malformed] == ["<grep></grep>", "</grep>", "<grep>vase"]
    assert step.output == HAND_OFF


def test_a_model_that_only_writes_malformed_tags_stops_after_the_rounds_its_budget_allows() -> None:
    step, model = _run(["<grep>"] * 10)
    assert len(model.calls) == 4  # three rounds of (malformed) calls, then the last reply
    assert [e.kind for e in step.call_events] == ["unclosed"] * 4
    assert all(c.error is not None for c in step.tool_calls)


def test_a_tool_of_more_than_one_argument_cannot_be_called_as_a_tag() -> None:
    def two(a: str, b: str) -> str:
        """Two arguments."""
        return a + b

    tool = StructuredTool.from_function(two)
    with pytest.raises(ConfigError, match="exactly one argument"):
        tool_argument(tool)


def test_checks_are_the_protocols_own() -> None:
    turn = _retriever_turn()
    model = ScriptedChatModel(["<grep>(cat</grep>", HAND_OFF])
    step = asyncio.run(run_text_turn(model, turn, checks={}))
    assert step.call_events == []  # without grep's check the pattern is not counted


def test_a_whole_rollout_records_the_retriever_calls_and_the_reasoner_answers() -> None:
    task = _task()
    question = task.split("test")[0]
    model = UnboundModel(["<grep>Noodle|cat</grep>", HAND_OFF, "Answer: Noodle"])
    rollout = asyncio.run(
        run_rollout(
            default_team(task, tool_protocol="text"),
            task,
            question,
            FakeProvider({"actor": model}),
            sampling=SamplingSettings.greedy(),
            rollout_id="r0",
        )
    )
    retriever, reasoner = rollout.steps
    assert [c.arguments for c in retriever.tool_calls] == [{"query": "Noodle|cat"}]
    assert "[D1:1]" in retriever.tool_calls[0].result
    assert HAND_OFF in reasoner.input
    assert "## Tool calls" not in reasoner.system_prompt  # the reasoner has no tools
    assert rollout.answer == "Noodle" and rollout.reward == 1.0


def test_a_groups_opening_is_sampled_without_tools_bound() -> None:
    task = _task()
    model = UnboundModel(["<grep>Noodle</grep>"])
    openings = asyncio.run(
        sample_openings(
            default_team(task, tool_protocol="text"),
            task,
            task.split("test")[0],
            FakeProvider({"actor": model}),
            sampling=SamplingSettings.training(),
            n=2,
        )
    )
    assert [o.message.text for o in openings] == ["<grep>Noodle</grep>"]
    assert "## Tool calls" in model.calls[0][0].text


def test_the_demo_memory_retriever_works_under_both_protocols() -> None:
    task = load_demo()
    memory = next(q for q in task.split("test") if task.is_memory(q))
    passage = next(q for q in task.split("test") if not task.is_memory(q))
    runs: list[tuple[str, list[AIMessage | str]]] = [
        ("text", ["<grep>the</grep>", "Evidence: NO_EVIDENCE", "Answer: x", "x", "Answer: x"]),
        ("function", [_call("the"), "Evidence: NO_EVIDENCE", "Answer: x", "x", "Answer: x"]),
    ]
    for protocol, replies in runs:
        team = default_team(task, tool_protocol=protocol)
        model = ScriptedChatModel(replies)
        provider = FakeProvider({"actor": model})
        for question in (memory, passage):
            rollout = asyncio.run(
                run_rollout(
                    team,
                    task,
                    question,
                    provider,
                    sampling=SamplingSettings.greedy(),
                    rollout_id=f"{protocol}-{question.id}",
                )
            )
            calls = rollout.steps[0].tool_calls
            if question is memory:
                assert [c.arguments for c in calls] == [{"query": "the"}], protocol
                assert calls[0].error is None and calls[0].result
            else:
                assert calls == [] and "## Tool calls" not in rollout.steps[0].system_prompt


def _call(query: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "grep", "args": {"query": query}, "id": "c"}])


def test_teams_and_configs_select_the_protocol() -> None:
    task = _task()
    assert {a.tool_protocol for a in default_team(task).agents} == {"function"}
    team = default_team(task).with_tool_protocol("text")
    assert {a.tool_protocol for a in team.agents} == {"text"}
    with pytest.raises(ConfigError, match="unknown tool protocol 'xml'"):
        default_team(task, tool_protocol="xml")
    with pytest.raises(ConfigError, match="known: function, text"):
        default_team(task).with_tool_protocol("xml")
    assert TrainConfig(task="locomo").tool_protocol == "function"
    assert (
        TrainConfig.model_validate({"task": "locomo", "paper_mode": True}).tool_protocol == "text"
    )
    chosen = {"task": "locomo", "paper_mode": True, "tool_protocol": "function"}
    assert TrainConfig.model_validate(chosen).tool_protocol == "function"


def test_a_registry_of_your_own_adds_a_protocol() -> None:
    registry = TOOL_PROTOCOLS.with_protocol(TextCalls(name="text-unchecked", checks={}))
    assert list(registry) == ["function", "text", "text-unchecked"]
    with pytest.raises(ConfigError, match="registered twice"):
        registry.with_protocol(TextCalls())


def test_a_main_agent_asks_its_sub_agent_with_a_text_call() -> None:
    task = _task()
    question = task.split("test")[0]
    spec = default_team(task, topology="centralized", tool_protocol="text")
    replies: list[AIMessage | str] = [
        "<ask_retriever>Find Rosa's cat.</ask_retriever>",  # the reasoner (main agent)
        "<grep>Noodle</grep>",  # the retriever, asked
        HAND_OFF,
        "Answer: Noodle",  # the reasoner, with the retriever's report
    ]
    model = UnboundModel(replies)
    rollout = asyncio.run(
        run_rollout(
            spec,
            task,
            question,
            FakeProvider({"actor": model}),
            sampling=SamplingSettings.greedy(),
            rollout_id="r",
        )
    )
    retriever, reasoner = rollout.steps
    assert "<ask_retriever>REQUEST</ask_retriever>" in reasoner.system_prompt
    assert [c.name for c in reasoner.tool_calls] == ["ask_retriever"]
    assert HAND_OFF in reasoner.tool_calls[0].result
    assert [c.arguments for c in retriever.tool_calls] == [{"query": "Noodle"}]
    assert rollout.answer == "Noodle"


def test_an_evaluation_folder_tells_the_protocols_apart() -> None:
    task = _task()

    def described(protocol: str) -> dict[str, Any]:
        team = default_team(task, tool_protocol=protocol)
        return TeamAnswerer(team, task, FakeProvider({}), SamplingSettings.greedy()).describe()

    # Function calling is described as before protocols existed, so old folders resume.
    assert "tool_protocol" not in str(described("function"))
    assert {a.get("tool_protocol") for a in described("text")["agents"]} == {"text"}
