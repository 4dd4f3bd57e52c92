"""LoCoMo category-specific operator prompts (GRSE App. F), selected through the task."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grse_graph.methods.operators import (
    OPERATOR_GUIDANCE,
    OperatorContext,
    induce,
    operator_guidance,
    refine,
)
from grse_graph.methods.operators.guidance import (
    DEMO_OPERATOR_GUIDANCE,
    LOCOMO_OPERATOR_GUIDANCE,
    TASK_WIDE,
)
from grse_graph.methods.plan import AggregationResult, EditDirection
from grse_graph.tasks import load_task
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.grse_methods_builders import library, skill
from tests.unit.methods.test_operators import draft, induce_pattern

MINI = Path(__file__).parents[3] / "fixtures" / "tasks" / "locomo_mini.json"


@pytest.mark.parametrize("category", ["multi-hop", "temporal", "open-domain", "single-hop"])
def test_a_locomo_category_run_gets_that_categorys_guidance(category: str) -> None:
    task = load_task("locomo", MINI, category=category, train_conversations=1)
    wide, own = LOCOMO_OPERATOR_GUIDANCE[TASK_WIDE], LOCOMO_OPERATOR_GUIDANCE[category]
    assert operator_guidance(task) == f"{wide} {own}"
    others = [t for c, t in LOCOMO_OPERATOR_GUIDANCE.items() if c not in (TASK_WIDE, category)]
    assert not any(t in operator_guidance(task) for t in others)
    assert OPERATOR_GUIDANCE["locomo"] is LOCOMO_OPERATOR_GUIDANCE


def test_mixed_runs_and_other_tasks_get_only_the_task_wide_guidance() -> None:
    mixed = load_task("locomo", MINI, category="mixed")
    assert operator_guidance(mixed) == LOCOMO_OPERATOR_GUIDANCE[TASK_WIDE]
    assert operator_guidance(load_task("demo")) == DEMO_OPERATOR_GUIDANCE[TASK_WIDE]
    assert operator_guidance(mixed, table={}) == ""


def test_the_guidance_reaches_the_induce_and_refine_prompts() -> None:
    task = load_task("locomo", MINI, category="temporal", train_conversations=1)
    guidance = operator_guidance(task)
    model = ScriptedChatModel(
        [
            draft(name="session dates"),
            tool_call_message(
                "RefineEdits", {"edits": [{"op": "delete", "anchor": "Step two.", "text": ""}]}
            ),
        ]
    )
    ctx = OperatorContext(
        provider=FakeProvider({"optimizer": model}), iteration=1, task_guidance=guidance
    )
    asyncio.run(
        induce(
            {"retriever": library("retriever")},
            AggregationResult(patterns=[induce_pattern(agent="retriever")]),
            ctx,
        )
    )
    refine_plan = AggregationResult(
        directions=[
            EditDirection(
                agent="retriever", skill_id="dates", summary="s", verdict="refine", utility=0.0
            )
        ]
    )
    asyncio.run(refine({"retriever": library("retriever", skill("dates"))}, refine_plan, ctx))
    induce_prompt, refine_prompt = (str(call[-1].content) for call in model.calls)
    assert f"Guidance for this task: {guidance}" in induce_prompt
    assert f"Guidance for this task: {guidance}" in refine_prompt
    assert "resolve relative expressions" in induce_prompt
