"""The paper's LoCoMo team on the LoCoMo task: the reasoner answers from the hand-off only."""

from __future__ import annotations

from pathlib import Path

from grse_graph.tasks.locomo import load_locomo
from grse_graph.team import compose_input, default_team
from grse_graph.team.rollout import Step, ToolCallRecord

MINI = Path(__file__).parents[2] / "fixtures" / "tasks" / "locomo_mini.json"


def test_reasoner_reads_the_retriever_hand_off_not_the_raw_grep_results() -> None:
    task = load_locomo(MINI, train_conversations=1, validation_conversations=1)
    question = task.split("test")[0]
    (grep,) = task.agent_tools(question, "retriever", position=0)
    raw = grep.invoke({"query": "Noodle"})
    retriever = Step(
        index=0,
        agent="retriever",
        system_prompt="",
        input=task.render_input(question),
        output="Evidence:\n- [D1:1] Rosa adopted a cat called Noodle.",
        tool_calls=[ToolCallRecord(name="grep", arguments={"query": "Noodle"}, result=raw)],
    )
    team = default_team(task)
    reasoner_input = compose_input(task.render_input(question), [retriever], team.agent("reasoner"))
    assert retriever.output in reasoner_input
    assert raw not in reasoner_input
    assert "Noodle broke a vase" not in reasoner_input  # a raw hit the retriever left out
