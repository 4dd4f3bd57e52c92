"""The MASkills critic: one call per trajectory, exposure-based schema, payload contents."""

from __future__ import annotations

import asyncio
import json

import pytest

from grse_graph.errors import StructuredOutputError
from grse_graph.methods.grse.payload import PayloadLimits
from grse_graph.methods.maskills.critic import TrajectoryCritic
from grse_graph.methods.maskills.schema import TrajectoryCritique, critique_schema
from grse_graph.methods.maskills.trace import build_skill_trace
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.maskills.maskills_builders import (
    args,
    credit,
    library,
    question,
    residual,
    skill,
    trajectory,
)

LONG_BODY = "Quote the passage sentence that answers the question.\n" + "x" * 900
LIBS = {
    "reader": library("reader", skill("extract", LONG_BODY), skill("never-used")),
    "answerer": library("answerer", skill("format", "Answer with one short phrase.")),
}


def reply(credits: list, residuals: list) -> object:
    return tool_call_message(
        "TrajectoryCritique",
        {"credits": [args(c) for c in credits], "residuals": [args(r) for r in residuals]},
    )


def test_schema_asks_for_exactly_one_credit_per_trace_pair_with_per_agent_enums() -> None:
    trace = build_skill_trace(trajectory(LIBS))
    schema = critique_schema(trace, list(LIBS)).model_json_schema()
    credits = schema["properties"]["credits"]
    assert credits["minItems"] == credits["maxItems"] == 3
    variants = {
        tuple(d["properties"]["agent"]["enum"]): d["properties"]["skill_id"]["enum"]
        for d in schema["$defs"].values()
        if d.get("title", "").startswith("MaskillsCredit_")
    }
    assert variants == {("reader",): ["extract", "never-used"], ("answerer",): ["format"]}
    residuals = schema["properties"]["residuals"]
    assert residuals["minItems"] == residuals["maxItems"] == 2


def test_a_flat_schema_lists_every_trace_agent_and_skill_once_and_off_is_plain() -> None:
    trace = build_skill_trace(trajectory(LIBS))
    flat = critique_schema(trace, list(LIBS), "flat").model_json_schema()
    assert flat["properties"]["credits"]["minItems"] == 3
    (variant,) = [d for d in flat["$defs"].values() if d.get("title") == "MaskillsCredit"]
    assert variant["properties"]["agent"]["enum"] == ["reader", "answerer"]
    assert variant["properties"]["skill_id"]["enum"] == ["extract", "never-used", "format"]
    assert critique_schema(trace, list(LIBS), "off") is TrajectoryCritique


def test_empty_libraries_advertise_no_credits_only_residuals() -> None:
    empty = {"reader": library("reader"), "answerer": library("answerer")}
    schema = critique_schema(build_skill_trace(trajectory(empty)), list(empty))
    props = schema.model_json_schema()["properties"]
    assert props["credits"]["maxItems"] == 0
    assert props["residuals"]["minItems"] == 2


def test_one_critic_call_credits_a_present_but_never_invoked_skill() -> None:
    rollout = trajectory(LIBS, reward=0.0)
    model = ScriptedChatModel(
        [
            reply(
                [
                    credit("reader", "extract"),
                    credit("reader", "never-used", verdict="neutral", delta=0.0),
                    credit("reader", "extract", verdict="harmful", delta=-1.0),  # repeat: dropped
                    credit("answerer", "ghost"),  # not in the library: dropped
                ],
                [
                    residual("reader", "fine"),
                    residual("answerer", "too long", needs=True, missing="brevity"),
                    residual("nobody", "ignored"),
                ],
            )
        ]
    )
    provider = FakeProvider({"critic": model})
    critic = TrajectoryCritic(provider, max_tokens=321)
    result = asyncio.run(critic.credit(question(), LIBS, rollout))

    assert len(model.calls) == 1 and result.critic_calls == 1
    assert provider.requests == [("critic", None, 321)]
    assert [(c.agent, c.skill_id, c.verdict) for c in result.credits] == [
        ("reader", "extract", "helped"),
        ("reader", "never-used", "neutral"),
    ]
    assert result.dropped_credits == 2
    assert result.uncredited == ["answerer/format"]
    assert [r.agent for r in result.residuals] == ["reader", "answerer"]
    assert result.residual_of("answerer").needs_new_skill  # type: ignore[union-attr]
    assert result.payload_chars > 0


def test_an_unparsable_critic_output_raises_for_the_loop_to_record() -> None:
    model = ScriptedChatModel(["not a call", "still not a call"])
    critic = TrajectoryCritic(FakeProvider({"critic": model}))
    with pytest.raises(StructuredOutputError):
        asyncio.run(critic.credit(question(), LIBS, trajectory(LIBS)))


def test_needs_new_skill_is_a_real_boolean() -> None:
    # The reference read "false" as True (Python truthiness, spec D-16).
    parsed = TrajectoryCritique.model_validate(
        {
            "credits": [],
            "residuals": [
                {"agent": "a", "summary": "", "needs_new_skill": "false", "missing_capability": ""}
            ],
        }
    )
    assert parsed.residuals[0].needs_new_skill is False


def _payload(**kw: object) -> str:
    rollout = trajectory(LIBS, reward=0.25, outputs=("The passage says Paris.", "Answer: Paris"))
    critic = TrajectoryCritic(FakeProvider({}), **kw)  # type: ignore[arg-type]
    return critic.payload(question(), LIBS, rollout, build_skill_trace(rollout)).text


def test_payload_has_the_reference_sections_in_order() -> None:
    text = _payload()
    order = [
        "# Trajectory",
        "Ground truth: Paris",
        "Team score: 0.2500 -> FAILURE",
        "# Steps",
        "## Step 1 - agent reader (initial response)",
        "## Step 2 - agent answerer (final answer (the one scored))",
        'Final answer: "Paris"',
        "Checklist:",
        "# Invoked skills",
        "- never-used (steps 1)",
        "# Agent ids\nreader, answerer",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert "f1=0.25" in text


def test_payload_shows_each_body_once_cut_to_the_excerpt_and_no_tool_results() -> None:
    text = _payload(excerpt_chars=100)
    assert text.count("Quote the passage sentence") == 1
    assert "[skill extract: see Invoked skills]" in text
    assert "chars cut]" in text
    assert "SECRET" not in text  # tool results are not shown to the MASkills critic


def test_payload_caps_context_and_the_brevity_hint_is_optional() -> None:
    text = _payload(limits=PayloadLimits(step_input_chars=20), brevity_hint=True)
    assert "one or two words" in text
    assert "chars cut]" in text.split("# Steps")[0]
    assert "one or two words" not in _payload()


def test_success_label_is_strictly_above_one_half() -> None:
    for reward, label in ((0.5, "FAILURE"), (0.51, "SUCCESS")):
        rollout = trajectory(LIBS, reward=reward)
        critic = TrajectoryCritic(FakeProvider({}))
        text = critic.payload(question(), LIBS, rollout, build_skill_trace(rollout)).text
        assert f"-> {label}" in text
    assert json.dumps("Paris") in text


def test_a_repeated_policy_is_shown_once_and_positions_follow_the_step_order() -> None:
    rollout = trajectory(LIBS)
    first = rollout.steps[0]
    rollout = rollout.model_copy(
        update={"steps": [first, first.model_copy(update={"index": 1}), rollout.steps[1]]}
    )
    critic = TrajectoryCritic(FakeProvider({}))
    text = critic.payload(question(), LIBS, rollout, build_skill_trace(rollout)).text
    assert "## Step 2 - agent reader (intermediate step)\nPolicy: same as step 1" in text
    assert "## Step 3 - agent answerer (final answer (the one scored))" in text
    assert "- extract (steps 1, 2)" in text


def test_a_token_budget_cuts_the_payload_only_as_far_as_needed() -> None:
    long_output = "The passage says Paris. " * 200
    rollout = trajectory(LIBS, outputs=(long_output, "Answer: Paris"))
    trace = build_skill_trace(rollout)
    critic = TrajectoryCritic(FakeProvider({}), limits=PayloadLimits(max_tokens=100_000))
    roomy = critic.payload(question(), LIBS, rollout, trace)
    assert long_output.strip() in roomy.text and roomy.size_tokens and not roomy.over_budget
    tight = PayloadLimits(max_tokens=roomy.size_tokens // 2)
    fitted = TrajectoryCritic(FakeProvider({}), limits=tight).payload(
        question(), LIBS, rollout, trace
    )
    assert long_output.strip() not in fitted.text
    assert fitted.size_tokens is not None and fitted.size_tokens <= roomy.size_tokens // 2
    assert not fitted.over_budget
    impossible = TrajectoryCritic(FakeProvider({}), limits=PayloadLimits(max_tokens=10))
    assert impossible.payload(question(), LIBS, rollout, trace).over_budget
