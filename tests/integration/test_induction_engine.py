"""Induction on the embedded engine: the demo's sound `no_edit` hand-off diagnosis, in a
low-reward group, reaches induce for the retriever's empty library, and whatever the small
optimizer drafts passes the memorisation check or is rejected with the finding recorded."""

from __future__ import annotations

import asyncio

import pytest

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.roles import ModelRoles
from grse_graph.methods.grse.aggregate import aggregate
from grse_graph.methods.operators import (
    MemorisationCheck,
    OperatorSchedule,
    evolve,
    training_inputs,
)
from grse_graph.skills import SkillLibrary
from grse_graph.tasks import load_task
from grse_graph.team import default_team
from tests.unit.methods.grse_methods_builders import critique, diagnosis

pytestmark = pytest.mark.engine


def test_an_empty_library_induces_from_a_low_reward_group_on_the_engine(
    small_engine_url: str,
) -> None:
    task = load_task("demo")
    team = default_team(task)
    roles_text = [agent.role for agent in team.agents]
    check = MemorisationCheck.of(training_inputs(task, task.split("train"), roles_text))
    handoff = diagnosis(
        agent="retriever",
        skill_id=None,
        failure_type="handoff_error",
        failed_refs=["r1.s1", "r2.s1", "r3.s1"],
        successful_refs=["r4.s1"],
        explanation="r1-r3 found the Orrin Museum passage but did not say the museum is in "
        "Osterlin, so the reasoner never saw the city; r4 handed it over.",
        correction="State that the Orrin Museum is in Osterlin in the hand-off.",
        action="no_edit",
    )
    libraries = {a.name: SkillLibrary(agent=a.name, skills=[]) for a in team.agents}
    roles = ModelRoles(load_config(env={}), UsageLedger(), engine_url=small_engine_url)
    plan = asyncio.run(
        aggregate(
            [critique("demo-mh-03", diagnoses=[handoff])],
            libraries,
            roles,
            group_rewards={"demo-mh-03": [0.0, 0.0, 0.0, 1.0]},
        )
    )
    result = asyncio.run(
        evolve(
            libraries,
            plan,
            iteration=1,
            schedule=OperatorSchedule(),
            library_limit=4,
            provider=roles,
            agent_context={a.name: a.role for a in team.agents},
            memorisation=check,
        )
    )
    [record] = [r for r in result.records if r.operator == "induce"]
    assert record.agent == "retriever" and record.evidence.question_ids == ["demo-mh-03"]
    print(record.model_dump_json(indent=2))
    if record.changed:
        body = result.candidates["retriever"].skills[0].body
        print(body)
        assert check.find(body) is None
    else:
        assert record.skipped_reason
