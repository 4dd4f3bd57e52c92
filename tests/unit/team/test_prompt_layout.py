"""Prompt layouts: the paper's role-first order, and the shared task input first."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from grse_graph.tasks.registry import load_task
from grse_graph.team.graph import agent_turn_input
from grse_graph.team.layout import input_first, role_first
from grse_graph.team.spec import default_team


def test_role_first_is_the_papers_order() -> None:
    messages = role_first("ROLE", "INPUT\n\nhand-off", "INPUT")
    assert messages == [SystemMessage(content="ROLE"), HumanMessage(content="INPUT\n\nhand-off")]


def test_input_first_moves_the_shared_input_into_the_system_message() -> None:
    messages = input_first("ROLE", "INPUT\n\n## Response of retriever\nx", "INPUT")
    assert messages == [
        SystemMessage(content="INPUT"),
        HumanMessage(content="ROLE\n\n## Response of retriever\nx"),
    ]


def test_input_first_keeps_the_role_layout_without_the_shared_input() -> None:
    assert input_first("ROLE", "a request", "INPUT") == role_first("ROLE", "a request", None)


def test_both_agents_of_an_input_first_team_open_with_the_same_tokens() -> None:
    task = load_task("demo")
    question = next(q for q in task.split("test") if "conversation_id" not in q.context)
    team = default_team(task, prompt_layout="input_first")
    first, _ = agent_turn_input(task, question, team.agents[0], 0, "passages", [])
    second, _ = agent_turn_input(task, question, team.agents[1], 1, "passages", [])
    assert first.shared_input == second.shared_input == task.render_input(question)
    assert first.prompt_layout == second.prompt_layout == "input_first"
    assert default_team(task).agents[0].prompt_layout == "role_first"
