"""The credit call (used-skill attribution with a judge call only where a step said nothing),
the registry entry, the fixed subset and the per-question team."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from grse_graph.methods.base import CreditInputs, CreditUnit
from grse_graph.methods.registry import create_method
from grse_graph.methods.skillmas import SkillmasMethod, SkillmasSettings, SkillmasState
from grse_graph.methods.skillmas.execution import USED_LINE_REQUEST, fixed_subset, select_libraries
from grse_graph.methods.skillmas.team import TeamMember, build_team
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team import default_team
from grse_graph.team.rollout import Rollout, Step
from grse_graph.training.config import TrainConfig
from tests.unit.methods.skillmas.skillmas_fakes import SKILL_BODY, Calls, FakeProvider, TwoTypeTask


def _skill(name: str) -> Skill:
    return Skill.build(name=name, description=f"{name} questions", body=SKILL_BODY)


def _inputs(rollout: Rollout, provider: FakeProvider) -> CreditInputs:
    task = TwoTypeTask()
    question = task.split("train")[4]
    libraries = {"reasoner": SkillLibrary.build("reasoner", [_skill("colours"), _skill("dates")])}
    return CreditInputs(
        iteration=1,
        question=question,
        libraries=libraries,
        rollouts=[rollout],
        provider=provider,
        team=default_team(task),
        task=task,
    )


def _rollout(outputs: list[str]) -> Rollout:
    steps = [
        Step(
            index=i,
            agent="reasoner",
            system_prompt="s",
            input="i",
            output=o,
            skills_present=["colours", "dates"],
        )
        for i, o in enumerate(outputs)
    ]
    return Rollout(
        rollout_id="it1-t4-g0", question_id="t4", steps=steps, answer="red", metrics={"f1": 0.0}
    )


def test_judge_only_for_steps_without_an_explicit_signal() -> None:
    calls = Calls()
    provider = FakeProvider(lambda schema, m: {"used": ["dates"]}, calls)
    rollout = _rollout(["Answer: red\nSkills used: colours", "Answer: red"])
    unit = CreditUnit(unit_id="u", question_id="t4", rollout_ids=[rollout.rollout_id])
    record = asyncio.run(
        SkillmasMethod(SkillmasSettings()).credit(unit, _inputs(rollout, provider))
    )
    assert calls.count("FollowedSkills") == 1 and record.judge_calls == 1
    first, second = record.signals
    assert first.inline == ["colours"] and first.judge is None and first.used == ["colours"]
    assert second.judge == ["dates"] and second.used == ["dates"]
    assert record.trace is not None and record.trace.task_type == "multi-hop"
    assert record.trace.used == {"reasoner": ["colours", "dates"]}
    assert record.trace.max_steps is None  # no task tools: no step budget


def test_a_failed_judge_call_costs_only_that_signal() -> None:
    provider = FakeProvider(lambda schema, m: {"used": ["not-a-skill"]}, Calls())
    rollout = _rollout(["Answer: red"])
    unit = CreditUnit(unit_id="u", question_id="t4", rollout_ids=[rollout.rollout_id])
    record = asyncio.run(
        SkillmasMethod(SkillmasSettings()).credit(unit, _inputs(rollout, provider))
    )
    (sig,) = record.signals
    assert sig.judge is None and sig.judge_error is not None and sig.used == []
    assert record.error is None


def test_registry_and_config_section() -> None:
    config = TrainConfig(task="hotpotqa", method={"name": "skillmas", "k": 2})
    method = create_method(config.method)
    assert isinstance(method, SkillmasMethod) and method.settings.k == 2
    assert TrainConfig.model_validate_json(config.model_dump_json()).method == config.method


def test_fixed_subset_is_proportional_and_reproducible() -> None:
    questions = [
        TaskQuestion(id=f"q{i}", question="q", answer="a", category="a" if i < 6 else "b")
        for i in range(9)
    ]
    subset = fixed_subset(questions, 6, seed=0)
    assert subset == fixed_subset(questions, 6, seed=0)
    counts = Counter("a" if int(q[1:]) < 6 else "b" for q in subset)
    assert counts == {"a": 4, "b": 2}
    assert subset == sorted(subset, key=lambda q: int(q[1:]))


def test_round_team_selects_k_skills_offers_shadow_in_training_and_asks_for_the_line() -> None:
    task = TwoTypeTask()
    skills = [_skill(n) for n in ("alpha", "beta", "colours", "dates")]
    state = SkillmasState(
        members=[
            TeamMember(name="retriever", seed=True),
            TeamMember(
                name="specialist-multi-hop", seed=False, role="You check.", targets=["multi-hop"]
            ),
            TeamMember(name="reasoner", seed=True),
        ],
        status={"reasoner": {"colours": "shadow"}},
    )
    libraries = {"reasoner": SkillLibrary.build("reasoner", skills)}
    question = task.split("train")[0]  # single-hop: the specialist does not run
    chosen = select_libraries(state, libraries, question, "single-hop", 3, training=True)
    assert len(chosen["reasoner"]) == 3 and set(chosen) == {"retriever", "reasoner"}
    test_time = select_libraries(state, libraries, question, "single-hop", 5, training=False)
    assert "colours" not in test_time["reasoner"].names()
    team = build_team(default_team(task), state.members, chosen, "single-hop", USED_LINE_REQUEST)
    assert team.agent_names == ["retriever", "reasoner"]
    assert USED_LINE_REQUEST in team.agent("reasoner").role
    assert USED_LINE_REQUEST not in team.agent("retriever").role  # no skills, no request
    multi = build_team(default_team(task), state.members, {}, "multi-hop")
    assert multi.agent_names == ["retriever", "specialist-multi-hop", "reasoner"]
    specialist: Any = multi.agent("specialist-multi-hop")
    assert specialist.tools == () and specialist.sees_tool_results
