"""LEARN as the code runs it (spec §5.2): the action pattern analysis with bigrams and
trigrams, the exemplar scores, the prompt's sections and the skill spec it writes."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import BaseMessage

from grse_graph.methods.skillmas.drafting import (
    action_pattern_summary,
    failure_example_score,
    select_failure_examples,
    select_success_examples,
    success_example_score,
)
from grse_graph.methods.skillmas.retention import retain
from grse_graph.methods.skillmas.skills import SKILL_EXEMPLAR, TAGS_KEY
from grse_graph.methods.skillmas.tables import SkillUtilityTable
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.methods.skillmas.work import EvolutionWork, RoundEvidence
from grse_graph.skills import SkillLibrary
from tests.unit.methods.skillmas.skillmas_fakes import SKILL_BODY, Calls, FakeProvider, learn


def trace(rid: str, success: bool, actions: list[str], **fields: Any) -> VerifiedTrace:
    return VerifiedTrace.model_validate(
        {
            "rollout_id": rid,
            "question_id": rid,
            "task_type": "multi-hop",
            "task": "q",
            "success": success,
            "executors": ["retriever", "reasoner"],
            "action_trace": [f"retriever > {a}(x) -> 1 matches" for a in actions],
            "error_message": "" if success else "wrong",
            "summary": f"Q: {rid}",
            **fields,
        }
    )


def test_patterns_compare_bigrams_and_trigrams_of_successes_and_failures() -> None:
    traces = [
        trace("s1", True, ["grep", "grep", "respond"], steps=2),
        trace("s2", True, ["grep", "respond"], steps=1),
        trace("f1", False, ["respond", "grep"], steps=1),
    ]
    assert action_pattern_summary(traces).split("\n") == [
        "successes 2 (mean tool calls 1.5), failures 1 (mean tool calls 1.0)",
        "top actions in successes: grep x3, respond x2",
        "top actions in failures: respond x1, grep x1",
        "sequences only in successes: grep -> grep; grep -> respond; grep -> grep -> respond",
        "sequences only in failures: respond -> grep",
        "top success bigrams: grep -> respond x2, grep -> grep x1",
    ]


def test_exemplar_scores() -> None:
    short = trace("a", True, ["grep"] * 20, steps=1)
    long = trace("b", True, ["grep"] * 2, steps=4, used={"reasoner": ["x", "y"]})
    # 0.45/1 + 0.35 x 1 + 0.20/1 = 1.0; 0.45/4 + 0.35 x 0.1 + 0.20/2 = 0.2475
    assert success_example_score(short) == 1.0
    assert round(success_example_score(long), 4) == 0.2475
    assert select_success_examples([long, short], 1) == [short]
    near = trace("n", False, ["grep"] * 10, steps=2)
    far = trace("f", False, [], steps=8, error_message="")
    # near: 0.35 x 1 + 0.25 x 0.5 + 0.20 x 0.35 + 0.20 x 1 = 0.745 (mean success steps 2)
    assert round(failure_example_score(near, 2.0), 4) == 0.745
    # far: closeness 0, density 0, overlap 0.35, error signal 0.2 -> 0.11
    assert round(failure_example_score(far, 2.0), 4) == 0.11
    assert round(failure_example_score(far, None), 4) == 0.25  # 0.4 closeness without successes
    assert select_failure_examples([far, near], [short, long], 1) == [near]


def test_learn_prompt_and_the_skill_it_writes() -> None:
    prompts: list[str] = []

    def writer(schema: str, messages: list[BaseMessage]) -> dict[str, Any]:
        prompts.append(str(messages[-1].content))
        return {"agent": "reasoner", "description": "Bridge first.", "body": SKILL_BODY}

    traces = [
        trace("s1", True, ["grep", "grep", "respond"], steps=2),
        trace("f1", False, ["respond", "grep"], steps=1),
    ]
    work = EvolutionWork(
        libraries={a: SkillLibrary.empty(a, 4) for a in ("retriever", "reasoner")},
        status={},
        table=SkillUtilityTable(),
    )
    ev = RoundEvidence(
        round=2,
        traces=traces,
        retained=retain(traces, {}).items,
        diagnoses=[],
        agents=["retriever", "reasoner"],
        final_agent="reasoner",
        domain="a QA team (twotype)",
    )
    asyncio.run(learn(work, ev, FakeProvider(writer, Calls())))
    (prompt,) = prompts
    assert "Task type: multi-hop, in a QA team (twotype)" in prompt
    assert "sequences only in successes: grep -> grep; grep -> respond" in prompt
    assert "grep -> grep -> respond" in prompt  # a trigram
    assert "sequences only in failures: respond -> grep" in prompt
    assert SKILL_EXEMPLAR in prompt and "Under 400 words" in prompt
    skill = work.libraries["reasoner"].get("multi-hop-learned-r2")
    assert skill.description == (
        "Strategy for multi-hop questions, learned from 1 successful episodes (round 2): "
        "Bridge first."
    )
    assert skill.metadata[TAGS_KEY] == "multi-hop,trajectory-learned,round-2"
