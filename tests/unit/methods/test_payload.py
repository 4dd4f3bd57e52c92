"""Critic payload: repeated text carried once, steps labelled, sizes reported."""

from __future__ import annotations

import pytest

from grse_graph.methods.grse.payload import PayloadLimits, build_critic_payload
from tests.unit.methods.grse_methods_builders import (
    PASSAGES,
    library,
    question,
    skill,
    two_agent_rollout,
)

EXTRACT_BODY = "Quote the sentence that answers the question."


def _group(n: int = 4) -> tuple[list, dict]:
    libs = {
        "reader": library("reader", skill("extract", EXTRACT_BODY)),
        "answerer": library("answerer"),
    }
    system = (f"You read passages.\nSkill extract:\n{EXTRACT_BODY}", "You answer briefly.")
    rollouts = [
        two_agent_rollout(i, 1.0 if i == 0 else 0.0, system_prompts=system) for i in range(n)
    ]
    return rollouts, libs


def test_passages_and_system_prompts_appear_once() -> None:
    rollouts, libs = _group()
    payload = build_critic_payload(question(), libs, rollouts, [1.5, -0.5, -0.5, -0.5])
    text = payload.text
    assert text.count("Paris is the capital of France.") == 1
    assert text.count("You read passages.") == 1
    assert text.count("You answer briefly.") == 1
    assert text.count("<<SYSTEM:reader>> =") == 1
    assert text.count("system: <<SYSTEM:reader>>") == 4
    # The skill body is shown in the library section only; the system prompt references it.
    assert text.count(EXTRACT_BODY) == 1
    assert "<<SKILL:reader/extract>>" in text
    # The answerer's input quotes the reader's output: referenced, not repeated.
    assert "Reader said: <<r1.s1>>" in text
    assert payload.size_chars == len(text)
    assert payload.size_chars < payload.naive_size_chars


def test_naive_size_repeats_everything() -> None:
    rollouts, libs = _group()
    payload = build_critic_payload(question(), libs, rollouts, [0.0] * 4)
    # The naive rendering carries the passages in every step input (2 steps x 4 rollouts).
    assert payload.naive_size_chars > 8 * len(PASSAGES)


def test_steps_rewards_advantages_tools_and_skills_are_shown() -> None:
    rollouts, libs = _group(2)
    text = build_critic_payload(question(), libs, rollouts, [1.0, -1.0]).text
    assert "## r1 reward=1.00 advantage=+1.00" in text
    assert "## r2 reward=0.00 advantage=-1.00" in text
    for label in ("[r1.s1] agent=reader", "[r1.s2] agent=answerer", "[r2.s1]", "[r2.s2]"):
        assert label in text
    assert 'tool r1.s1.t1 grep({"q": "capital"}) result: Paris' in text
    assert "skills present: extract; invoked: -" in text


def test_different_system_prompts_of_one_agent_get_versions() -> None:
    rollouts, libs = _group(2)
    other = two_agent_rollout(2, 0.0, system_prompts=("Another prompt.", "You answer briefly."))
    text = build_critic_payload(question(), libs, [*rollouts, other], [0.0] * 3).text
    assert "<<SYSTEM:reader#2>> =" in text


def test_category_only_with_labels() -> None:
    rollouts, libs = _group(2)
    q = question(category="multi-hop")
    assert "Category: multi-hop" not in build_critic_payload(q, libs, rollouts, [0, 0]).text
    assert (
        "Category: multi-hop"
        in build_critic_payload(q, libs, rollouts, [0, 0], with_labels=True).text
    )


def test_long_fields_are_capped_with_a_marker() -> None:
    rollouts, libs = _group(1)
    long = rollouts[0].steps[0].model_copy(update={"output": "x" * 500})
    rollout = rollouts[0].model_copy(update={"steps": [long]})
    text = build_critic_payload(
        question(), libs, [rollout], [0.0], limits=PayloadLimits(step_output_chars=100)
    ).text
    assert "[... 400 chars cut]" in text


def test_mismatched_advantages_are_an_error() -> None:
    rollouts, libs = _group(2)
    with pytest.raises(ValueError):
        build_critic_payload(question(), libs, rollouts, [0.0])


def test_identical_tool_results_are_shown_once() -> None:
    rollouts, libs = _group(3)
    result = "[D1:3] Caroline went to the LGBTQ support group on 7 May 2023."
    patched = []
    for r in rollouts:
        call = r.steps[0].tool_calls[0].model_copy(update={"result": result})
        step = r.steps[0].model_copy(update={"tool_calls": [call]})
        patched.append(r.model_copy(update={"steps": [step, r.steps[1]]}))
    text = build_critic_payload(question(), libs, patched, [0.0] * 3).text
    assert text.count(result) == 1
    assert text.count("same as <<r1.s1.t1>>") == 2


def test_skill_bodies_from_render_inline_and_load_skill_are_referenced() -> None:
    from grse_graph.skills import render_inline

    libs = {
        "reader": library("reader", skill("extract", EXTRACT_BODY)),
        "answerer": library("answerer"),
    }
    system = render_inline("You read passages.", libs["reader"])
    r = two_agent_rollout(0, 1.0, system_prompts=(system, "You answer briefly."))
    call = (
        r.steps[0].tool_calls[0].model_copy(update={"name": "load_skill", "result": EXTRACT_BODY})
    )
    step = r.steps[0].model_copy(update={"tool_calls": [call]})
    r = r.model_copy(update={"steps": [step, r.steps[1]]})
    text = build_critic_payload(question(), libs, [r], [0.0]).text
    assert text.count(EXTRACT_BODY) == 1
    assert "### extract\n<<SKILL:reader/extract>>" in text
    assert "load_skill" in text and "result: <<SKILL:reader/extract>>" in text


def test_tool_result_quoted_in_a_later_input_is_referenced() -> None:
    rollouts, libs = _group(1)
    r = rollouts[0]
    result = "[D2:5] Melanie painted a sunrise in 2022."
    call = r.steps[0].tool_calls[0].model_copy(update={"result": result})
    first = r.steps[0].model_copy(update={"tool_calls": [call]})
    second = r.steps[1].model_copy(update={"input": f"Evidence:\n{result}\nNotes: {first.output}"})
    text = build_critic_payload(
        question(), libs, [r.model_copy(update={"steps": [first, second]})], [0.0]
    ).text
    assert text.count(result) == 1
    assert "Evidence:\n<<r1.s1.t1>>\nNotes: <<r1.s1>>" in text
