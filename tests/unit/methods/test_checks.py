"""Each attribution rule of GUIDE §3, passing and failing."""

from __future__ import annotations

import pytest

from grse_graph.methods.grse import checks
from grse_graph.methods.grse.checks import CheckContext, check_diagnosis, is_hypothesis
from grse_graph.methods.grse.critic_schema import StepRef
from grse_graph.methods.plan import FailureDiagnosis
from tests.unit.methods.grse_methods_builders import credit, diagnosis, two_agent_rollout


@pytest.fixture
def ctx() -> CheckContext:
    # r1 succeeds; r2 fails with `extract` present; r3 fails without any reader skill.
    rollouts = [
        two_agent_rollout(0, 1.0),
        two_agent_rollout(1, 0.0),
        two_agent_rollout(2, 0.4, reader_skills=()),
    ]
    return CheckContext.build(
        rollouts,
        {"reader": ["extract", "cite"], "answerer": ["format"]},
        [credit("reader", "extract")],
    )


def test_valid_refine_passes_every_rule(ctx: CheckContext) -> None:
    assert check_diagnosis(diagnosis(), ctx) == []


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("r2.s1", "r2.s1"),
        ("R2.S1", "r2.s1"),
        ("[r2.s1]", "r2.s1"),
        ("r2 s1", "r2.s1"),
        ("r10s3", "r10.s3"),
    ],
)
def test_ref_parsing(text: str, label: str) -> None:
    ref = StepRef.parse(text)
    assert ref is not None and ref.label == label


@pytest.mark.parametrize("text", ["2.1", "rollout 2", "r0.s1", "s1", ""])
def test_malformed_refs(text: str) -> None:
    assert StepRef.parse(text) is None


def test_refs_exist(ctx: CheckContext) -> None:
    assert checks.check_refs_exist(diagnosis(), ctx) == []
    bad = diagnosis(failed_refs=["r9.s1", "step two"], successful_refs=["r1.s7"])
    assert checks.check_refs_exist(bad, ctx) == [
        "failed_refs: step r9.s1 does not exist",
        "failed_refs: 'step two' is not a step reference like r1.s2",
        "successful_refs: step r1.s7 does not exist",
    ]


def test_refs_belong_to_named_agent(ctx: CheckContext) -> None:
    assert checks.check_refs_agent(diagnosis(), ctx) == []
    bad = diagnosis(failed_refs=["r2.s2"])
    assert checks.check_refs_agent(bad, ctx) == [
        "step r2.s2 belongs to agent 'answerer', not 'reader'"
    ]


def test_failed_refs_need_reward_below_one(ctx: CheckContext) -> None:
    assert checks.check_failed_refs(diagnosis(failed_refs=["r2.s1", "r3.s1"]), ctx) == []
    assert checks.check_failed_refs(diagnosis(failed_refs=["r1.s1"]), ctx) == [
        "failed_refs: r1.s1 is in rollout r1 with reward 1"
    ]
    assert checks.check_failed_refs(diagnosis(failed_refs=[]), ctx)


def test_successful_refs_need_reward_one(ctx: CheckContext) -> None:
    assert checks.check_successful_refs(diagnosis(successful_refs=["r1.s1"]), ctx) == []
    assert checks.check_successful_refs(diagnosis(successful_refs=[]), ctx) == []
    assert checks.check_successful_refs(diagnosis(successful_refs=["r3.s1"]), ctx) == [
        "successful_refs: r3.s1 is in rollout r3 with reward 0.40 < 1"
    ]


def test_refine_needs_owned_skill(ctx: CheckContext) -> None:
    assert checks.check_refine_skill_owned(diagnosis(), ctx) == []
    assert checks.check_refine_skill_owned(diagnosis(skill_id="format"), ctx)  # answerer's skill
    assert checks.check_refine_skill_owned(diagnosis(skill_id=None), ctx) == [
        "action refine needs a skill_id"
    ]
    # Other actions are not constrained by this rule.
    assert (
        checks.check_refine_skill_owned(diagnosis(skill_id="format", action="no_edit"), ctx) == []
    )


def test_refine_needs_skill_recorded_in_cited_failed_rollout(ctx: CheckContext) -> None:
    assert checks.check_refine_skill_recorded(diagnosis(failed_refs=["r2.s1"]), ctx) == []
    # r3's reader had no skills; r1 is not a failed rollout.
    assert checks.check_refine_skill_recorded(diagnosis(failed_refs=["r3.s1"]), ctx)
    assert checks.check_refine_skill_recorded(diagnosis(failed_refs=["r1.s1"]), ctx)
    # `cite` is owned but never present anywhere.
    assert checks.check_refine_skill_recorded(diagnosis(skill_id="cite"), ctx)


def test_refine_needs_matching_credit(ctx: CheckContext) -> None:
    assert checks.check_refine_has_credit(diagnosis(), ctx) == []
    no_credit = ctx.model_copy(update={"credited": frozenset()})
    assert checks.check_refine_has_credit(diagnosis(), no_credit) == [
        "action refine: no credit for ('reader', 'extract'); add one"
    ]
    assert checks.check_refine_has_credit(diagnosis(), no_credit.with_credits([credit()])) == []


@pytest.mark.parametrize("failure_type", ["tool_failure", "uncertain_attribution"])
def test_tool_failure_and_uncertain_allow_only_no_edit(
    ctx: CheckContext, failure_type: str
) -> None:
    assert (
        checks.check_no_edit_only(diagnosis(failure_type=failure_type, action="no_edit"), ctx) == []
    )
    assert checks.check_no_edit_only(diagnosis(failure_type=failure_type, action="refine"), ctx)
    assert checks.check_no_edit_only(
        diagnosis(failure_type=failure_type, action="induce", skill_id=None), ctx
    )
    assert checks.check_no_edit_only(diagnosis(failure_type="skill_defect"), ctx) == []


def test_tool_failure_needs_a_tool_error_in_a_cited_failed_step(ctx: CheckContext) -> None:
    # The reader's grep calls answered normally; the answerer never calls a tool.
    answered = diagnosis(failure_type="tool_failure", action="no_edit", skill_id=None)
    assert checks.check_tool_failure_has_tool_error(answered, ctx) == [
        "failure_type tool_failure: no tool call of 'reader' in the cited failed steps "
        "returned an error; choose the failure type that describes what went wrong"
    ]
    no_call = answered.model_copy(update={"agent": "answerer", "failed_refs": ["r2.s2"]})
    assert checks.check_tool_failure_has_tool_error(no_call, ctx)
    failing = two_agent_rollout(1, 0.0)
    failing.steps[0].tool_calls[0].error = "TimeoutError: grep took too long"
    with_error = CheckContext.build(
        [two_agent_rollout(0, 1.0), failing], {"reader": ["extract"], "answerer": []}
    )
    assert checks.check_tool_failure_has_tool_error(answered, with_error) == []
    # Other failure types need no tool error.
    handoff = no_call.model_copy(update={"failure_type": "handoff_error", "action": "induce"})
    assert checks.check_tool_failure_has_tool_error(handoff, ctx) == []


def test_induce_needs_no_skill(ctx: CheckContext) -> None:
    ok = diagnosis(action="induce", skill_id=None, failure_type="missing_capability")
    assert checks.check_induce_without_skill(ok, ctx) == []
    assert checks.check_induce_without_skill(diagnosis(action="induce"), ctx) == [
        "action induce needs skill_id null"
    ]


def test_blank_skill_words_mean_none() -> None:
    for word in ("none", "null", "", " None "):
        assert (
            FailureDiagnosis.model_validate(
                {
                    "agent": "a",
                    "skill_id": word,
                    "failure_type": "answer_format",
                    "failed_refs": [],
                    "successful_refs": [],
                    "explanation": "",
                    "correction": "",
                    "action": "induce",
                }
            ).skill_id
            is None
        )


def test_check_diagnosis_collects_all_violations(ctx: CheckContext) -> None:
    bad = diagnosis(failure_type="tool_failure", failed_refs=["r1.s2"], skill_id="cite")
    found = check_diagnosis(bad, ctx)
    assert any("belongs to agent 'answerer'" in v for v in found)
    assert any("with reward 1" in v for v in found)
    assert any("allows only action no_edit" in v for v in found)
    assert any("no credit" in v for v in found)


def test_hypothesis_marking() -> None:
    assert is_hypothesis(diagnosis(successful_refs=[]))
    assert not is_hypothesis(diagnosis(successful_refs=["r1.s1"]))
    assert not is_hypothesis(diagnosis(successful_refs=[], correction=""))
