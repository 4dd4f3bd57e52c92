"""Row 7: the three used-skill signals per step and the verified trace (rows 2-5, 26, 27)."""

from __future__ import annotations

from grse_graph.methods.skillmas.trace import (
    StepSignals,
    build_trace,
    parse_used_line,
    step_signals,
)
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.team.rollout import Rollout, Step, ToolCallRecord


def test_used_line_parsing() -> None:
    selected = ["dates", "names"]
    assert parse_used_line("blah\nAnswer: x\nSkills used: dates, `names`", selected) == selected
    assert parse_used_line("**Skills used:** none", selected) == []
    assert parse_used_line("Skills used: dates and other", selected) == ["dates"]
    assert parse_used_line("no line here", selected) is None


def test_explicit_signals_win_over_the_judge() -> None:
    sig = StepSignals(index=0, agent="a", selected=["x", "y"], inline=["x"], judge=["y"])
    assert sig.explicit and not sig.needs_judge
    assert sig.used == ["x"]
    silent = StepSignals(index=0, agent="a", selected=["x", "y"], judge=["y"])
    assert silent.needs_judge and silent.used == ["y"]
    assert StepSignals(index=0, agent="a", selected=[]).needs_judge is False


def _rollout(**fields: object) -> Rollout:
    steps = [
        Step(
            index=0,
            agent="retriever",
            system_prompt="s",
            input="i",
            output="found it\nSkills used: none",
            tool_calls=[ToolCallRecord(name="grep", arguments={"pattern": "x"}, result="a\nb")],
            skills_present=["search"],
        ),
        Step(
            index=1,
            agent="reasoner",
            system_prompt="s",
            input="i",
            output="Answer: blue",
            skills_present=["colours"],
            skills_invoked=["colours"],
        ),
    ]
    return Rollout.model_validate({"rollout_id": "r", "question_id": "q", "steps": steps, **fields})


def test_step_signals_and_tool_hints() -> None:
    search = Skill.build(name="search", description="d", body="b", allowed_tools=["grep"])
    libraries = {"retriever": SkillLibrary.build("retriever", [search])}
    retriever, reasoner = step_signals(_rollout(), libraries)
    assert retriever.inline == [] and retriever.hints == ["search"]
    assert retriever.used == ["search"]  # tool-hint overlap is the third signal
    assert reasoner.tool == ["colours"] and reasoner.inline is None and reasoner.used == ["colours"]


def test_verified_trace_outcome_budget_and_summary() -> None:
    rollout = _rollout(answer="red", reward=0.4, metrics={"f1": 0.3})
    signals = step_signals(rollout, {})
    trace = build_trace(
        rollout, question="What colour?", gold="blue", task_type="1", signals=signals, tool_budget=3
    )
    assert not trace.success and trace.score == 0.3
    assert trace.error_message == "wrong"
    assert trace.steps == 1 and trace.max_steps == 3
    assert trace.executors == ["retriever", "reasoner"]
    assert trace.action_trace[0] == "retriever > grep(pattern=x) -> 2 matches"
    assert trace.summary.endswith("F1 0.30")
    ok = build_trace(
        _rollout(answer="blue", metrics={"f1": 1.0}),
        question="q",
        gold="blue",
        task_type="1",
        signals=signals,
        tool_budget=0,
    )
    assert ok.success and ok.error_message == "" and ok.max_steps is None
