"""Critic payload: repeated text carried once, steps labelled, sizes reported."""

from __future__ import annotations

import pytest

from grse_graph.methods.grse.critic_schema import AgentVocabulary, CriticVocabulary
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
    # Inline mode (the default): skills are present, their use is not observable.
    assert "skills present (inline; use not observable): extract" in text
    assert "invoked: -" not in text


def test_different_system_prompts_of_one_agent_get_versions() -> None:
    rollouts, libs = _group(2)
    other = two_agent_rollout(2, 0.0, system_prompts=("Another prompt.", "You answer briefly."))
    text = build_critic_payload(question(), libs, [*rollouts, other], [0.0] * 3).text
    assert "<<SYSTEM:reader#2>> =" in text


def test_task_category_only_with_labels_else_not_grouped() -> None:
    rollouts, libs = _group(2)
    q = question(category="multi-hop")
    plain = build_critic_payload(q, libs, rollouts, [0, 0]).text
    assert "task_category: not_grouped" in plain
    assert "multi-hop" not in plain
    labelled = build_critic_payload(q, libs, rollouts, [0, 0], with_labels=True).text
    assert "task_category: multi-hop" in labelled


def test_long_fields_are_capped_with_a_marker() -> None:
    rollouts, libs = _group(1)
    long = rollouts[0].steps[0].model_copy(update={"output": "x" * 500})
    rollout = rollouts[0].model_copy(update={"steps": [long]})
    text = build_critic_payload(
        question(), libs, [rollout], [0.0], limits=PayloadLimits(step_output_chars=100)
    ).text
    assert "[... 400 chars cut ...]" in text


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


# --- issue 9: what decides the outcome survives, tokens are counted, App. F fields -----------


def _with_outputs(output: str, tool_result: str | None = None) -> tuple[list, dict]:
    rollouts, libs = _group(1)
    first = rollouts[0].steps[0]
    update: dict = {"output": output}
    if tool_result is not None:
        update["tool_calls"] = [first.tool_calls[0].model_copy(update={"result": tool_result})]
    return [rollouts[0].model_copy(update={"steps": [first.model_copy(update=update)]})], libs


def test_a_cut_output_keeps_its_end_where_the_hand_off_is() -> None:
    output = "reasoning " * 300 + "\nCandidate answer: Paris"
    rollouts, libs = _with_outputs(output)
    text = build_critic_payload(
        question(), libs, rollouts, [0.0], limits=PayloadLimits(step_output_chars=400)
    ).text
    assert "chars cut" in text
    assert "Candidate answer: Paris" in text


def test_every_retrieved_turn_keeps_its_dialogue_id() -> None:
    turns = [f'[D1:{i}] (8 May 2023) Ann said, "{"word " * 40}turn {i}"' for i in range(1, 21)]
    result = "Turns matching 'word' (20 matches):\n" + "\n".join(turns)
    rollouts, libs = _with_outputs("Evidence: [D1:20]", tool_result=result)
    text = build_critic_payload(
        question(), libs, rollouts, [0.0], limits=PayloadLimits(tool_result_chars=800)
    ).text
    for i in range(1, 21):
        assert f"[D1:{i}] (8 May 2023) Ann said" in text


def test_payload_is_fitted_to_a_token_budget_counted_by_the_counter() -> None:
    output = "reasoning " * 2000 + "\nCandidate answer: Paris"
    rollouts, libs = _with_outputs(output)
    counted: list[int] = []

    def count(text: str) -> int:
        counted.append(len(text))
        return len(text.split())  # one "token" per word

    uncut = build_critic_payload(
        question(),
        libs,
        rollouts,
        [0.0],
        limits=PayloadLimits(max_tokens=100_000),
        token_counter=count,
    )
    assert uncut.fitted_cap_chars is None and "chars cut" not in uncut.text
    fitted = build_critic_payload(
        question(),
        libs,
        rollouts,
        [0.0],
        limits=PayloadLimits(max_tokens=600),
        token_counter=count,
    )
    assert fitted.size_tokens is not None and fitted.size_tokens <= 600
    assert fitted.fitted_cap_chars is not None and not fitted.over_budget
    assert "Candidate answer: Paris" in fitted.text
    assert len(counted) >= 3  # uncut twice, then at least one cap


def test_observed_skill_use_is_shown_as_invoked() -> None:
    rollouts, libs = _group(1)
    text = build_critic_payload(
        question(), libs, rollouts, [0.0], observed_skill_use={"reader": True}
    ).text
    assert "skills present: extract; invoked: -" in text
    assert "skills present (inline; use not observable): -" in text  # the answerer


def test_citation_constraints_section() -> None:
    rollouts, libs = _group(2)
    vocabulary = CriticVocabulary(
        agents={
            "reader": AgentVocabulary(
                skills=("extract",), failed_refs=("r2.s1",), successful_refs=("r1.s1",)
            )
        }
    )
    text = build_critic_payload(
        question(), libs, rollouts, [1.0, -1.0], constraints=vocabulary
    ).text
    assert "# citation_constraints" in text
    assert "- reader: skills [extract]; failed_refs [r2.s1]; successful_refs [r1.s1]" in text
