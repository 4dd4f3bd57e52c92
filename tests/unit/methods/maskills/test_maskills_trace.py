"""The skill trace xi: exposure-based attribution, narrowed only by naming or loading a skill."""

from __future__ import annotations

from grse_graph.methods.maskills.trace import build_skill_trace, named_skills
from tests.unit.methods.maskills.maskills_builders import library, skill, trajectory

LIBS = {
    "reader": library("reader", skill("extract"), skill("short-answer")),
    "answerer": library("answerer", skill("format")),
}


def test_a_present_skill_never_invoked_or_named_is_in_the_trace() -> None:
    rollout = trajectory(LIBS)  # no step names or loads a skill
    trace = build_skill_trace(rollout)
    assert trace.skills_of("reader") == ["extract", "short-answer"]
    assert trace.skills_of("answerer") == ["format"]
    assert trace.pairs() == [
        ("reader", "extract"),
        ("reader", "short-answer"),
        ("answerer", "format"),
    ]
    assert all(not e.named for entries in trace.agents.values() for e in entries)
    assert trace.invocations("reader", "extract") == 1


def test_a_step_naming_a_skill_is_attributed_to_that_skill_only() -> None:
    rollout = trajectory(LIBS, outputs=("Using EXTRACT: Paris.", "Answer: Paris"))
    trace = build_skill_trace(rollout)
    assert trace.skills_of("reader") == ["extract"]
    assert trace.agents["reader"][0].named
    # The answerer named nothing: every skill it holds.
    assert trace.skills_of("answerer") == ["format"]


def test_names_match_whole_tokens_with_hyphens_as_word_characters() -> None:
    lib = {"reader": LIBS["reader"]}
    for text in ("extraction done", "pre-extract", "short answer", "extract-ing"):
        step = trajectory(lib, outputs=(text,)).steps[0]
        assert named_skills(step) == [], text
    step = trajectory(lib, outputs=("(short-answer) and extract.",)).steps[0]
    assert named_skills(step) == ["extract", "short-answer"]


def test_a_skill_loaded_through_the_tool_counts_as_named() -> None:
    rollout = trajectory(LIBS, loaded=(("short-answer",), ()))
    assert build_skill_trace(rollout).skills_of("reader") == ["short-answer"]


def test_an_agent_without_skills_has_no_trace_entry() -> None:
    libs = {"reader": library("reader"), "answerer": LIBS["answerer"]}
    trace = build_skill_trace(trajectory(libs))
    assert list(trace.agents) == ["answerer"]
    assert trace.steps_of("answerer", "format") == [1]


def test_an_agent_acting_several_times_gets_one_entry_per_step() -> None:
    # Centralized teams: the sub-agent runs once per delegation, then the main agent answers.
    libs = {"retriever": LIBS["reader"], "reasoner": LIBS["answerer"]}
    rollout = trajectory(libs)
    sub = rollout.steps[0]
    rollout = rollout.model_copy(
        update={
            "steps": [
                sub,
                sub.model_copy(update={"index": 1, "output": "extract says Paris"}),
                rollout.steps[1].model_copy(update={"index": 2}),
            ]
        }
    )
    trace = build_skill_trace(rollout)
    assert [e.step for e in trace.agents["retriever"]] == [0, 1]
    assert trace.invocations("retriever", "extract") == 2
    assert trace.invocations("retriever", "short-answer") == 1
    assert trace.steps_of("reasoner", "format") == [2]
