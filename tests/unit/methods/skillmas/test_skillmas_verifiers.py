"""Row 6: executor-local verifiers and the Q^a credit they give (the episode outcome stays the
default)."""

from __future__ import annotations

from grse_graph.methods.skillmas.round import learn_utilities
from grse_graph.methods.skillmas.tables import ExecutorUtilityTable, SkillUtilityTable
from grse_graph.methods.skillmas.trace import (
    VerifiedTrace,
    answer_or_supporting_title,
    evidence_retrieved,
    local_outcomes,
)
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout, Step, ToolCallRecord

LOCOMO = TaskQuestion(
    id="c1-q0", question="When did Ana move?", answer="2019", context={"evidence": ["D1:3"]}
)
HOTPOT = TaskQuestion(
    id="h0",
    question="Which band did the drummer join?",
    answer="The Police",
    context={"supporting_titles": ["Stewart Copeland", "The Police"]},
)


def step(agent: str, output: str, index: int = 0, results: tuple[str, ...] = ()) -> Step:
    calls = [ToolCallRecord(name="grep", arguments={"query": "move"}, result=r) for r in results]
    return Step(
        index=index, agent=agent, system_prompt="", input="", output=output, tool_calls=calls
    )


def test_retriever_is_verified_by_the_gold_evidence_turn() -> None:
    verifier = evidence_retrieved
    found = step("retriever", "see above", results=('[D1:3] (8 May) Ana said, "we moved"',))
    missed = step("retriever", "see above", results=('[D2:1] (9 May) Ana said, "hi"',))
    assert verifier(LOCOMO, found, True) is True
    assert verifier(LOCOMO, missed, True) is False
    assert verifier(LOCOMO, step("retriever", "x"), True) is False
    assert verifier(LOCOMO, found, False) is None  # not a retriever
    assert verifier(HOTPOT, found, True) is None  # no evidence ids


def test_first_hotpot_agent_is_verified_by_answer_or_supporting_title() -> None:
    verifier = answer_or_supporting_title
    assert verifier(HOTPOT, step("agent-1", "Stewart Copeland drummed."), False)
    assert verifier(HOTPOT, step("agent-1", "It was the police!"), False)
    assert not verifier(HOTPOT, step("agent-1", "Genesis."), False)
    assert verifier(LOCOMO, step("agent-1", "2019"), False) is None


def test_local_outcomes_skip_the_final_agent() -> None:
    rollout = Rollout(
        rollout_id="r",
        question_id="h0",
        steps=[step("agent-1", "Genesis", 0), step("agent-2", "Answer: The Police", 1)],
        answer="The Police",
        reward=1.0,
    )
    assert local_outcomes(rollout, HOTPOT, tool_agents=[]) == {"agent-1": False}
    assert local_outcomes(rollout, LOCOMO, tool_agents=[]) == {}  # no verifier applies


def test_local_credit_separates_seed_agents_that_episode_credit_ties() -> None:
    traces = [
        VerifiedTrace(
            rollout_id=f"r{i}",
            question_id=f"q{i}",
            task_type="bridge",
            task="q",
            success=True,
            executors=["agent-1", "agent-2"],
            local={"agent-1": i == 0},
        )
        for i in range(3)
    ]
    _, episode = learn_utilities(SkillUtilityTable(), ExecutorUtilityTable(), traces, {})
    assert episode.agents["agent-1"].overall.q == episode.agents["agent-2"].overall.q == 1.0
    _, local = learn_utilities(SkillUtilityTable(), ExecutorUtilityTable(), traces, {}, "local")
    assert round(local.agents["agent-1"].overall.q, 3) == 0.333
    assert local.agents["agent-2"].overall.q == 1.0  # final agent: the episode outcome
    assert round(local.value("agent-1", "bridge"), 3) == 0.333  # task entry n = 3: 0.6/0.4 mix
