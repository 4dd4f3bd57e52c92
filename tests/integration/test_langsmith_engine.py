"""LangSmith `aevaluate`, offline, of the team on two demo questions on the small engine."""

from __future__ import annotations

import asyncio

import pytest

from grse_graph.evaluation.langsmith_eval import run_langsmith_eval, team_target
from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.tasks import load_task
from grse_graph.team import default_team


@pytest.mark.engine
def test_aevaluate_offline_on_the_small_model(small_engine_url: str) -> None:
    task = load_task("demo")
    llm = load_config(
        env={}, overrides={"actor.base_url": small_engine_url, "actor.max_tokens": 64}
    )
    with ModelRoles(llm, UsageLedger()) as roles:
        summary = asyncio.run(
            run_langsmith_eval(
                team_target(default_team(task), task, roles), task, "test", limit=2, upload=False
            )
        )
        calls = roles.ledger.report().total.calls
    assert not summary.uploaded and summary.examples == 2 and summary.failed == 0
    assert calls >= 4  # two agents per question, every call through the one client path
    assert 0.0 <= summary.means["reward"] <= 1.0
    assert all(row.trace_id and row.prediction is not None for row in summary.rows)
