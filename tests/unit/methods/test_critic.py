"""The group-relative critic: checks, one repair round, drops, counts, hypotheses, variants."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import ValidationError

from grse_graph.errors import ConfigError
from grse_graph.llm.structured import (
    SCHEMA_NARROWING_KEY,
    STRUCTURED_METHOD_KEY,
    json_request,
    schema_narrowing,
)
from grse_graph.methods.aggregation import first_credit_per_skill
from grse_graph.methods.grse import prompts
from grse_graph.methods.grse.checks import CheckContext
from grse_graph.methods.grse.critic import GroupCritic, group_vocabulary
from grse_graph.methods.grse.critic_schema import CritiqueResult, critic_output_schema
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.grse_methods_builders import (
    credit,
    diagnosis,
    library,
    question,
    skill,
    two_agent_rollout,
)

LIBS = {"reader": library("reader", skill("extract")), "answerer": library("answerer")}
ROLLOUTS = [two_agent_rollout(0, 1.0), two_agent_rollout(1, 0.0)]


def _args(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json")


def output(
    *, credits: list | None = None, diagnoses: list | None = None, feedback: list | None = None
):
    return tool_call_message(
        "CriticOutput",
        {
            "credits": [_args(c) for c in (credits if credits is not None else [credit()])],
            "agent_feedback": feedback or [],
            "diagnoses": [_args(d) for d in (diagnoses or [])],
        },
    )


def repair(*, diagnoses: list, credits: list | None = None):
    return tool_call_message(
        "CriticRepair",
        {"diagnoses": [_args(d) for d in diagnoses], "credits": [_args(c) for c in credits or []]},
    )


def run(replies: list, **kw: Any) -> tuple[CritiqueResult, ScriptedChatModel, FakeProvider]:
    model = ScriptedChatModel(replies)
    provider = FakeProvider({"critic": model})
    critic = GroupCritic(provider, **kw)
    result = asyncio.run(critic.critique(question(), LIBS, ROLLOUTS, [1.0, -1.0]))
    return result, model, provider


def test_valid_diagnosis_is_accepted_with_one_call() -> None:
    result, model, provider = run([output(diagnoses=[diagnosis()])])
    assert [d.status for d in result.diagnoses] == ["accepted"]
    assert result.counts.accepted == 1 and result.counts.dropped == 0
    assert len(model.calls) == 1 and result.critic_calls == 1
    assert provider.requests == [("critic", None, None)]  # the critic role's own cap
    assert result.payload_chars < result.naive_payload_chars
    # The optimizer will see how the reader's output ended in the cited failed and successful runs.
    contrast = result.diagnoses[0].contrast
    assert contrast is not None
    assert contrast.failed == "The passages say Paris (attempt 1)."
    assert contrast.successful == "The passages say Paris (attempt 0)."


def test_invalid_then_repaired() -> None:
    bad = diagnosis(failed_refs=["r1.s1"])  # r1 has reward 1
    fixed = diagnosis(failed_refs=["r2.s1"])
    result, model, _ = run([output(diagnoses=[bad]), repair(diagnoses=[fixed])])
    [checked] = result.diagnoses
    assert checked.status == "repaired"
    assert checked.diagnosis == fixed and checked.original == bad
    assert checked.violations == [
        "failed_refs: r1.s1 is in rollout r1 with reward 1",
        "action refine: skill 'extract' was not present or used by 'reader' "
        "in any cited failed rollout",
    ]
    assert result.counts.model_dump() == {
        "accepted": 0,
        "repaired": 1,
        "dropped": 0,
        "hypothesis": 0,
    }
    assert len(model.calls) == 2
    repair_prompt = model.calls[1][-1].content
    assert "failed_refs: r1.s1 is in rollout r1 with reward 1" in repair_prompt


def test_still_invalid_after_repair_is_dropped_and_counted() -> None:
    bad = diagnosis(failure_type="uncertain_attribution", action="refine")
    result, model, _ = run([output(diagnoses=[bad]), repair(diagnoses=[bad])])
    [checked] = result.diagnoses
    assert checked.status == "dropped"
    assert checked.final_violations == [
        "failure_type uncertain_attribution allows only action no_edit"
    ]
    assert result.counts.dropped == 1 and result.counts.accepted == 0
    assert len(model.calls) == 2  # exactly one repair round


def test_only_violating_diagnoses_go_to_repair_and_order_is_kept() -> None:
    good = diagnosis(action="no_edit", failure_type="uncertain_attribution", skill_id=None)
    bad = diagnosis(action="induce")  # induce with a skill_id
    fixed = diagnosis(action="induce", skill_id=None, failure_type="missing_capability")
    result, model, _ = run([output(diagnoses=[bad, good]), repair(diagnoses=[fixed])])
    assert [d.status for d in result.diagnoses] == ["repaired", "accepted"]
    prompt = model.calls[1][-1].content
    assert "Diagnosis 1:" in prompt and "Diagnosis 2:" not in prompt
    assert "action induce needs skill_id null" in prompt


def test_repair_may_add_the_missing_credit() -> None:
    result, _, _ = run(
        [
            output(credits=[], diagnoses=[diagnosis()]),
            repair(diagnoses=[diagnosis()], credits=[credit()]),
        ]
    )
    assert result.diagnoses[0].status == "repaired"
    assert [(c.agent, c.skill_id) for c in result.credits] == [("reader", "extract")]


def test_repair_returning_too_few_diagnoses_drops_the_rest() -> None:
    a, b = diagnosis(failed_refs=["r1.s1"]), diagnosis(failed_refs=["r9.s9"])
    result, _, _ = run([output(diagnoses=[a, b]), repair(diagnoses=[diagnosis()])])
    assert [d.status for d in result.diagnoses] == ["repaired", "dropped"]
    assert result.counts.repaired == 1 and result.counts.dropped == 1


def test_unparseable_repair_drops_all_violating() -> None:
    bad = diagnosis(failed_refs=["r1.s1"])
    # astructured_call makes two attempts (one internal repair) before giving up.
    result, _, _ = run([output(diagnoses=[bad]), "no idea", "still no idea"])
    assert result.diagnoses[0].status == "dropped"
    assert result.diagnoses[0].final_violations[0].startswith("repair call failed")


def test_hypotheses_are_counted() -> None:
    hyp = diagnosis(successful_refs=[])
    compared = diagnosis()
    result, _, _ = run([output(diagnoses=[hyp, compared])])
    assert [d.is_hypothesis for d in result.diagnoses] == [True, False]
    assert result.counts.hypothesis == 1 and result.counts.accepted == 2


def test_credits_deduplicated_first_wins_and_unknown_skills_dropped() -> None:
    first = credit(utility=-0.5)
    result, _, _ = run(
        [
            output(
                credits=[
                    first,
                    credit(utility=0.9),
                    credit("answerer", "extract"),
                    credit(skill_id="x"),
                ],
                diagnoses=[diagnosis()],
            )
        ]
    )
    assert result.credits == [first]
    assert result.dropped_credits == 3


def test_first_credit_per_skill_is_deterministic() -> None:
    kept, dropped = first_credit_per_skill(
        [credit(), credit(verdict="helped", utility=1.0)], {"reader": ["extract"]}
    )
    assert kept[0].verdict == "harmful" and dropped == 1


def test_category_is_recorded_only_with_labels() -> None:
    model = ScriptedChatModel([output(diagnoses=[diagnosis()]), output(diagnoses=[diagnosis()])])
    provider = FakeProvider({"critic": model})
    q = question(category="temporal")
    plain = asyncio.run(GroupCritic(provider).critique(q, LIBS, ROLLOUTS, [1.0, -1.0]))
    labelled = asyncio.run(
        GroupCritic(provider, with_labels=True).critique(q, LIBS, ROLLOUTS, [1.0, -1.0])
    )
    assert plain.category is None and labelled.category == "temporal"
    assert "task_category: temporal" in model.calls[1][-1].content
    assert "task_category: not_grouped" in model.calls[0][-1].content


def test_without_structure_keeps_group_relative_credits_but_no_diagnoses() -> None:
    feedback = [{"agent": "answerer", "feedback": "too long", "missing_capability": "brevity"}]
    reply = tool_call_message(
        "CriticCredits",
        {
            "credits": [_args(credit()), _args(credit(skill_id="not-in-library"))],
            "agent_feedback": feedback,
        },
    )
    result, model, _ = run([reply], structured=False)
    assert not result.structured and result.diagnoses == []
    assert [(c.agent, c.skill_id, c.verdict) for c in result.credits] == [
        ("reader", "extract", "harmful")
    ]
    assert result.dropped_credits == 1
    assert result.agent_feedback[0].missing_capability == "brevity"
    assert len(model.calls) == 1
    system = model.calls[0][0].content
    assert "credits" in system and "failure_type" not in system


def test_critic_prompt_follows_app_f() -> None:
    system = prompts.critic_system(structured=True, answer_length_note=True)
    for phrase in (
        "behaviour differs",
        "Look past where the error surfaces",
        "handoff_error: the agent had the needed information",
        "evidence_missing:",
        "HotpotQA is scored by token F1",
        "The gold answer is not shown",
    ):
        assert phrase in system
    assert "HotpotQA" not in prompts.critic_system(structured=True, answer_length_note=False)
    assert prompts.CRITIC_USER.format(payload="P").endswith("INPUT:\nP")


def test_payload_carries_citation_constraints_and_observed_skill_use() -> None:
    result, model, _ = run([output(diagnoses=[diagnosis()])], observed_skill_use={"reader": True})
    text = model.calls[0][-1].content
    assert "# citation_constraints" in text
    assert "- reader: skills [extract]; failed_refs [r2.s1]; successful_refs [r1.s1]" in text
    assert "skills present: extract; invoked: -" in text
    assert result.counts.accepted == 1


def test_a_group_with_a_failure_must_be_diagnosed() -> None:
    # minItems reaches the engine's grammar through the tool schema; an empty list is a
    # validation error that gets the structured-output repair round.
    failing = critic_output_schema(group_has_failure=True)
    assert failing.__name__ == "CriticOutput"
    assert failing.model_json_schema()["properties"]["diagnoses"]["minItems"] == 1
    empty = {"credits": [], "agent_feedback": [], "diagnoses": []}
    assert critic_output_schema(group_has_failure=False).model_validate(empty).diagnoses == []
    with pytest.raises(ValidationError):
        failing.model_validate(empty)
    result, model, _ = run([output(diagnoses=[]), output(diagnoses=[diagnosis()])])
    assert len(model.calls) == 2
    assert [d.status for d in result.diagnoses] == ["accepted"]


def test_an_all_successful_group_may_have_no_diagnosis() -> None:
    model = ScriptedChatModel([output(diagnoses=[])])
    critic = GroupCritic(FakeProvider({"critic": model}))
    winners = [two_agent_rollout(0, 1.0), two_agent_rollout(1, 1.0)]
    result = asyncio.run(critic.critique(question(), LIBS, winners, [0.0, 0.0]))
    assert result.diagnoses == [] and len(model.calls) == 1


class SchemaRecordingModel(ScriptedChatModel):
    """Records the JSON schema of every tool it is bound to."""

    schemas: list[dict[str, Any]] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools: Any, **kwargs: Any) -> SchemaRecordingModel:  # type: ignore[override]
        from langchain_core.utils.function_calling import convert_to_openai_tool

        self.schemas.extend(convert_to_openai_tool(t)["function"] for t in tools)
        return self


def test_the_tool_schema_advertises_each_agents_own_skills_steps_and_actions() -> None:
    model = SchemaRecordingModel([output(diagnoses=[diagnosis()])])
    critic = GroupCritic(FakeProvider({"critic": model}))
    asyncio.run(critic.critique(question(), LIBS, ROLLOUTS, [1.0, -1.0]))
    (tool,) = model.schemas
    assert tool["name"] == "CriticOutput"
    sent = tool["parameters"]
    assert sent["properties"]["diagnoses"]["minItems"] == 1  # a failing group must be diagnosed

    names = {agent: lib.names() for agent, lib in LIBS.items()}
    schema = critic_output_schema(True, group_vocabulary(CheckContext.build(ROLLOUTS, names)))
    defs = schema.model_json_schema()["$defs"]
    # Rollout r1 succeeded and r2 failed; each has the steps s1 (reader) and s2 (answerer).
    reader = defs["FailureDiagnosis_reader"]["properties"]
    assert reader["agent"]["enum"] == ["reader"]
    assert reader["failed_refs"]["items"]["enum"] == ["r2.s1"]
    assert reader["failed_refs"]["minItems"] == 1
    assert reader["successful_refs"]["items"]["enum"] == ["r1.s1"]
    # A named skill is refined or left; a diagnosis without one (its own variant) induces.
    assert reader["skill_id"]["anyOf"] == [{"type": "string", "enum": ["extract"]}]
    assert reader["action"]["enum"] == ["refine", "no_edit"]
    new = defs["FailureDiagnosis_reader_no_skill"]["properties"]
    assert new["skill_id"]["anyOf"] == [{"type": "null"}]
    assert new["action"]["enum"] == ["induce", "no_edit"]
    assert "skill_defect" not in new["failure_type"]["enum"]
    # The answerer has no skill: nothing to refine, no skill to blame, only null to name.
    answerer = defs["FailureDiagnosis_answerer"]["properties"]
    assert answerer["failed_refs"]["items"]["enum"] == ["r2.s2"]
    assert answerer["action"]["enum"] == ["induce", "no_edit"]
    assert "skill_defect" not in answerer["failure_type"]["enum"]
    assert answerer["skill_id"]["anyOf"] == [{"type": "null"}]
    # No tool call of a failed step returned an error, so no agent is offered tool_failure.
    assert "tool_failure" not in reader["failure_type"]["enum"]
    assert "skill_defect" in reader["failure_type"]["enum"]
    assert "tool_failure" not in answerer["failure_type"]["enum"]
    assert "handoff_error" in answerer["failure_type"]["enum"]
    failing = two_agent_rollout(1, 0.0)
    failing.steps[0].tool_calls[0].error = "TimeoutError: grep took too long"
    erred = group_vocabulary(CheckContext.build([ROLLOUTS[0], failing], names))
    erred_defs = critic_output_schema(True, erred).model_json_schema()["$defs"]
    erred_reader = erred_defs["FailureDiagnosis_reader"]["properties"]
    assert "tool_failure" in erred_reader["failure_type"]["enum"]
    # Only the reader owns a skill, so only it can be credited.
    assert defs["SkillCredit_reader"]["properties"]["skill_id"]["enum"] == ["extract"]
    assert "SkillCredit_answerer" not in defs


def test_the_schema_bounds_each_list_and_the_parser_still_reads_a_longer_one() -> None:
    model = SchemaRecordingModel(
        [
            output(diagnoses=[diagnosis(), diagnosis(action="induce")]),
            repair(diagnoses=[diagnosis()]),
        ]
    )
    critic = GroupCritic(FakeProvider({"critic": model}), max_diagnoses=1)
    result = asyncio.run(critic.critique(question(), LIBS, ROLLOUTS, [1.0, -1.0]))
    first, *rest = model.schemas
    sent = first["parameters"]["properties"]
    # One credit per (agent, skill): only the reader's `extract` exists; one feedback per agent.
    assert (sent["diagnoses"]["minItems"], sent["diagnoses"]["maxItems"]) == (1, 1)
    assert sent["credits"]["maxItems"] == 1
    assert sent["agent_feedback"]["maxItems"] == 2
    # A server that ignores the bound is not a failed call: both diagnoses reach the checks.
    assert len(result.diagnoses) == 2
    # The induce diagnosis names a skill: sent back alone, so its repair advertises one item.
    assert [d.status for d in result.diagnoses] == ["accepted", "repaired"]
    assert [tool["parameters"]["properties"]["diagnoses"]["maxItems"] for tool in rest] == [1]
    unbounded = critic_output_schema(True).model_json_schema()["properties"]["diagnoses"]
    assert "maxItems" not in unbounded


def test_the_credits_only_schema_has_the_same_bounds_and_the_parser_reads_longer_lists() -> None:
    no_diagnoses = output(diagnoses=[])
    feedback = {"agent": "answerer", "feedback": "too long", "missing_capability": ""}
    credits_only = tool_call_message(
        "CriticCredits",
        {"credits": [_args(credit())] * 2, "agent_feedback": [feedback] * 3},
    )
    model = SchemaRecordingModel([no_diagnoses, no_diagnoses, credits_only])
    critic = GroupCritic(FakeProvider({"critic": model}))
    result = asyncio.run(critic.critique(question(), LIBS, ROLLOUTS, [1.0, -1.0]))
    [sent] = [tool["parameters"] for tool in model.schemas if tool["name"] == "CriticCredits"]
    # As in the structured schema: one credit per (agent, skill), one feedback per agent.
    assert sent["properties"]["credits"]["maxItems"] == 1
    assert sent["properties"]["agent_feedback"]["maxItems"] == 2
    # A server that ignores the bounds is not a failed call: the fallback keeps the group's
    # credits (the repeated pair dropped as usual) and all of its feedback.
    assert result.diagnosis_error and result.critic_calls == 2
    assert [(c.agent, c.skill_id) for c in result.credits] == [("reader", "extract")]
    assert result.dropped_credits == 1 and len(result.agent_feedback) == 3


def test_a_name_outside_the_vocabulary_is_parsed_and_left_to_the_checks() -> None:
    # Servers that do not enforce the schema can still send any string: one diagnosis is
    # dropped by the attribution checks, the critic call itself does not fail.
    bad = diagnosis(agent="Agent 2", failed_refs=["Passage 4"])
    result, _, _ = run([output(diagnoses=[bad]), repair(diagnoses=[bad])])
    [checked] = result.diagnoses
    assert checked.status == "dropped"
    assert result.critic_calls == 2


def test_a_critic_that_cannot_diagnose_a_failing_group_keeps_its_credits() -> None:
    # The failing group needs >= 1 diagnosis; both tries return none, so the strict call fails.
    no_diagnoses = output(diagnoses=[])
    credits_only = tool_call_message(
        "CriticCredits", {"credits": [_args(credit())], "agent_feedback": []}
    )
    result, model, _ = run([no_diagnoses, no_diagnoses, credits_only])
    assert result.structured and result.diagnoses == []
    assert [(c.agent, c.skill_id) for c in result.credits] == [("reader", "extract")]
    assert result.diagnosis_error and len(model.calls) == 3


def test_a_prompt_shown_schema_is_the_plain_one_a_grammar_gets_the_narrowed_one() -> None:
    reply = json.dumps(
        {
            "credits": [_args(credit())],
            "agent_feedback": [],
            "diagnoses": [_args(diagnosis())],
        }
    )
    model = ScriptedChatModel([reply], metadata={STRUCTURED_METHOD_KEY: "json_prompt"})
    critic = GroupCritic(FakeProvider({"critic": model}))
    result = asyncio.run(critic.critique(question(), LIBS, ROLLOUTS, [1.0, -1.0]))
    assert [d.status for d in result.diagnoses] == ["accepted"]
    shown = model.calls[0][-1].text
    # The plain schema is shown (the payload itself names the skills and steps), not the
    # narrowed one, whose per-agent variants only pay off where a grammar enforces them.
    assert shown == json_request(critic_output_schema(True, None))
    narrowed = json_request(
        critic_output_schema(True, group_vocabulary(CheckContext.build(ROLLOUTS, {})))
    )
    assert len(narrowed) > len(shown)


def test_a_role_chooses_the_shape_of_the_schema_in_its_forced_call() -> None:
    sent: dict[str, dict[str, Any]] = {}
    for shape in ("off", "per_agent", "flat", None):
        metadata = {SCHEMA_NARROWING_KEY: shape} if shape else None
        model = SchemaRecordingModel([output(diagnoses=[diagnosis()])], metadata=metadata)
        critic = GroupCritic(FakeProvider({"critic": model}))
        result = asyncio.run(critic.critique(question(), LIBS, ROLLOUTS, [1.0, -1.0]))
        assert [d.status for d in result.diagnoses] == ["accepted"]
        assert schema_narrowing(model) == (shape or "per_agent")
        (tool,) = model.schemas
        sent[str(shape)] = tool["parameters"]["properties"]["diagnoses"]["items"]
    # One variant per agent, and the reader's second one for a diagnosis naming no skill.
    assert len(sent["per_agent"]["anyOf"]) == 3
    assert sent["per_agent"] == sent["None"]  # per-agent is the default
    # Flat: one variant for all agents, and one for a diagnosis naming no skill.
    assert [v["properties"]["agent"]["enum"] for v in sent["flat"]["anyOf"]] == [
        ["reader", "answerer"]
    ] * 2
    assert "enum" not in sent["off"]["properties"]["agent"]


def test_a_flat_vocabulary_lists_each_name_once_over_the_agents_it_applies_to() -> None:
    names = {agent: lib.names() for agent, lib in LIBS.items()}
    vocabulary = group_vocabulary(CheckContext.build(ROLLOUTS, names), flat=True)
    schema = critic_output_schema(True, vocabulary)
    defs = schema.model_json_schema()["$defs"]
    assert not any(name.startswith("FailureDiagnosis_") for name in defs)
    diagnosis_fields = defs["FailureDiagnosis"]["properties"]
    assert diagnosis_fields["agent"]["enum"] == ["reader", "answerer"]
    assert diagnosis_fields["failed_refs"]["items"]["enum"] == ["r2.s1", "r2.s2"]
    assert diagnosis_fields["successful_refs"]["items"]["enum"] == ["r1.s1", "r1.s2"]
    assert diagnosis_fields["skill_id"]["anyOf"][0]["enum"] == ["extract"]
    # Only the reader owns a skill, so the credit's agent enum names it alone.
    credit_fields = defs["SkillCredit_reader"]["properties"]
    assert credit_fields["agent"]["enum"] == ["reader"]
    per_agent = critic_output_schema(True, group_vocabulary(CheckContext.build(ROLLOUTS, names)))
    assert len(json_request(schema)) < len(json_request(per_agent))


def test_an_unknown_narrowing_in_model_metadata_is_a_config_error() -> None:
    model = ScriptedChatModel([], metadata={SCHEMA_NARROWING_KEY: "yes"})
    with pytest.raises(ConfigError, match="grse_schema_narrowing"):
        schema_narrowing(model)


def test_a_reply_cut_off_in_its_second_diagnosis_keeps_the_first_in_one_call() -> None:
    # The demo's 0.5B critic ran into its cap inside a diagnosis (2026-12-01): the complete
    # diagnoses before the cut are kept instead of losing the group's diagnoses.
    whole = json.dumps(
        {
            "credits": [_args(credit())],
            "agent_feedback": [],
            "diagnoses": [_args(diagnosis()), _args(diagnosis())],
        }
    )
    cut = whole[: whole.rindex('"explanation"') + 20]
    reply = AIMessage(
        content="", invalid_tool_calls=[{"name": "CriticOutput", "args": cut, "id": "c1"}]
    )
    result, model, _ = run([reply])
    assert [d.status for d in result.diagnoses] == ["accepted"]
    assert len(model.calls) == 1 and result.diagnosis_error is None


def test_without_structure_the_payload_has_no_citation_constraints_or_task_category() -> None:
    # App. F: structured analysis is what adds task_category and citation_constraints.
    reply = tool_call_message("CriticCredits", {"credits": [_args(credit())], "agent_feedback": []})
    _, model, _ = run([reply], structured=False)
    text = model.calls[0][-1].content
    assert "citation_constraints" not in text
    assert "task_category" not in text
    structured = GroupCritic(FakeProvider({})).payload(question(), LIBS, ROLLOUTS, [1.0, -1.0])
    assert "# citation_constraints" in structured.text
    assert "task_category: not_grouped" in structured.text
