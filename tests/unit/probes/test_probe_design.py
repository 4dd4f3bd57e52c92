"""`plan_probes`: which team runs a probe makes within its budget (no model, no engine)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from grse_graph.probes import (
    ProbeError,
    ProbeSettings,
    SkillRef,
    libraries_hash,
    masked_libraries,
    plan_probes,
)
from grse_graph.skills import Skill, SkillLibrary

QUESTIONS = ["q0", "q1", "q2", "q3"]


def library(agent: str, names: Sequence[str], body: str = "Do {name}.") -> SkillLibrary:
    skills = [
        Skill.build(name=n, description=f"Use for {n}.", body=body.format(name=n)) for n in names
    ]
    return SkillLibrary.build(agent, skills)


def three_skills() -> dict[str, SkillLibrary]:
    return {"retriever": library("retriever", ["a", "b"]), "reasoner": library("reasoner", ["c"])}


def six_skills() -> dict[str, SkillLibrary]:
    return {
        "retriever": library("retriever", ["a", "b", "c"]),
        "reasoner": library("reasoner", ["d", "e", "f"]),
    }


def test_leave_one_out_when_every_question_fits_the_budget() -> None:
    # 4 questions x (3 skills + 1) = 16 runs, exactly the budget.
    plan = plan_probes(three_skills(), QUESTIONS, ProbeSettings(budget=16))
    assert plan.design == "leave_one_out"
    assert plan.runs == 16 and plan.questions == QUESTIONS and plan.questions_left_out == 0
    assert [r.question_id for r in plan.requests[:4]] == QUESTIONS
    assert all(r.is_full for r in plan.requests[:4])
    assert not any(r.is_full for r in plan.requests[4:])
    skills = [SkillRef(agent="retriever", skill="a"), SkillRef(agent="retriever", skill="b")]
    skills.append(SkillRef(agent="reasoner", skill="c"))
    assert plan.skills == skills
    # Skill by skill: consecutive runs share every agent's prompt prefix.
    masked = [(r.masked, r.question_id) for r in plan.requests[4:]]
    assert masked == [((ref,), q) for ref in skills for q in QUESTIONS]


def test_random_masks_when_leave_one_out_does_not_fit() -> None:
    # Leave-one-out needs 4 x 7 = 28 runs; 24 // 4 - 1 = 5 masks per question is enough.
    plan = plan_probes(six_skills(), QUESTIONS, ProbeSettings(budget=24))
    assert plan.design == "random_masks"
    assert plan.runs == 24 and plan.questions == QUESTIONS and plan.questions_left_out == 0
    assert all(r.is_full for r in plan.requests[:4])
    masked = plan.requests[4:]
    assert all(r.masked for r in masked)
    assert all(sum(r.question_id == q for r in masked) == 5 for q in QUESTIONS)


def test_random_masks_are_seeded_and_differ_between_questions() -> None:
    settings = ProbeSettings(budget=24)
    plan = plan_probes(six_skills(), QUESTIONS, settings)
    again = plan_probes(six_skills(), QUESTIONS, settings)
    assert again.requests == plan.requests

    def masks(q: str) -> list[tuple[SkillRef, ...]]:
        return [r.masked for r in plan.requests if r.question_id == q and not r.is_full]

    assert masks("q0") != masks("q1")
    reseeded = plan_probes(six_skills(), QUESTIONS, ProbeSettings(budget=24, seed=1))
    assert reseeded.requests != plan.requests


def test_leave_one_out_on_fewer_questions_when_neither_design_fits() -> None:
    # 28 runs for leave-one-out, and 16 // 4 - 1 = 3 random masks is too few: 16 // 7 = 2
    # questions with leave-one-out.
    plan = plan_probes(six_skills(), QUESTIONS, ProbeSettings(budget=16))
    assert plan.design == "leave_one_out"
    assert plan.questions == ["q0", "q1"] and plan.questions_left_out == 2
    assert plan.runs == 2 * 7


def test_forced_leave_one_out_cuts_questions_rather_than_switching_design() -> None:
    plan = plan_probes(six_skills(), QUESTIONS, ProbeSettings(budget=24, design="leave_one_out"))
    assert plan.design == "leave_one_out"
    assert plan.questions == ["q0", "q1", "q2"] and plan.questions_left_out == 1
    assert plan.runs == 21


def test_forced_random_masks_when_leave_one_out_would_fit() -> None:
    plan = plan_probes(three_skills(), QUESTIONS, ProbeSettings(budget=20, design="random_masks"))
    assert plan.design == "random_masks" and plan.runs == 20


def _one_line_error(libraries: dict[str, SkillLibrary], questions: list[str], **kw: object) -> str:
    with pytest.raises(ProbeError) as caught:
        plan_probes(libraries, questions, ProbeSettings.model_validate(kw))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_empty_libraries_are_an_error() -> None:
    empty = {"retriever": SkillLibrary.empty("retriever"), "reasoner": library("reasoner", [])}
    assert "every library is empty" in _one_line_error(empty, QUESTIONS)


def test_fewer_than_two_distinct_questions_are_an_error() -> None:
    message = _one_line_error(three_skills(), ["q0", "q0"])
    assert "at least 2 questions, got 1" in message


def test_a_budget_too_small_for_two_questions_is_an_error() -> None:
    message = _one_line_error(six_skills(), QUESTIONS, budget=10)
    assert "too small to probe 6 skills: at least 14 runs are needed" in message


def test_forced_random_masks_with_too_small_a_budget_is_an_error() -> None:
    message = _one_line_error(six_skills(), QUESTIONS, budget=16, design="random_masks")
    assert "gives 3 random masks per question on 4 questions" in message
    assert "at least 20 runs are needed" in message


def test_run_ids_are_stable_and_name_the_libraries() -> None:
    libraries = three_skills()
    fingerprint = libraries_hash(libraries)
    assert libraries_hash(three_skills()) == fingerprint
    plan = plan_probes(libraries, QUESTIONS, ProbeSettings(budget=16))
    ids = [r.run_id(fingerprint) for r in plan.requests]
    assert len(set(ids)) == len(ids)
    assert ids[0] == f"{fingerprint}:q0:full"
    assert f"{fingerprint}:q0:retriever/b" in ids
    again = plan_probes(three_skills(), QUESTIONS, ProbeSettings(budget=16))
    assert [r.run_id(libraries_hash(three_skills())) for r in again.requests] == ids


def test_other_libraries_get_other_run_ids() -> None:
    edited = {**three_skills(), "reasoner": library("reasoner", ["c"], body="Do {name} twice.")}
    moved = {"retriever": library("retriever", ["a"]), "reasoner": library("reasoner", ["b", "c"])}
    hashes = {libraries_hash(three_skills()), libraries_hash(edited), libraries_hash(moved)}
    assert len(hashes) == 3


def test_masked_libraries_remove_only_the_masked_skills() -> None:
    libraries = three_skills()
    masked = masked_libraries(libraries, [SkillRef(agent="retriever", skill="a")])
    assert masked["retriever"].names() == ["b"]
    assert masked["reasoner"] is libraries["reasoner"]
    assert libraries["retriever"].names() == ["a", "b"]
