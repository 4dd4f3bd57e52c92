"""Prefix slots on llama-cpp-python with the small model: two agents' prompts alternate, and
each agent's fixed prefix is computed once, in its own slot, instead of once per question."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import EngineSettings, default_cache_dir, load_config
from grse_graph.llm.engine_slots import EngineSlots, slot_log_path
from grse_graph.llm.roles import ModelRoles
from tests.integration.engine_support import long_prefix

pytestmark = pytest.mark.engine


def test_alternating_agents_reuse_their_own_prefix(tmp_path: Path) -> None:
    settings = EngineSettings(
        model="small",
        engine="llama-cpp-python",
        n_ctx=4096,
        threads=2,
        n_parallel=2,
        cache_dir=default_cache_dir(),
    )
    prefixes = {agent: long_prefix(agent) for agent in ("harbour", "orchard")}
    with EngineSlots(settings, log_path=tmp_path / "engine.log") as engine:
        assert len(set(engine.slot_urls)) == 2
        ledger = UsageLedger()
        ledger.attach_engine_stats(engine.prompt_eval_stats)
        roles = ModelRoles(
            load_config(env={}),
            ledger,
            engine_url=engine.base_url,
            engine_slots={engine.base_url: engine.slot_urls},
        )
        with roles:
            model = roles.chat("actor", max_tokens=4)

            def ask_each_agent(item: int) -> None:
                for prefix in prefixes.values():
                    question = HumanMessage(content=f"Which room holds item {item}?")
                    model.invoke([SystemMessage(content=prefix), question])

            ask_each_agent(7)
            first_round = engine.prompt_eval_stats()
            ask_each_agent(14)
            ask_each_agent(21)
        stats = engine.prompt_eval_stats()
        report = ledger.report()
    later = stats - first_round
    assert stats.completions == 6 and first_round.completions == 2
    # Each agent's first question computes its prefix (over 900 tokens); after that every turn
    # reuses it, although the agents alternate (one process would compute it at every turn).
    assert first_round.evaluated_prompt_tokens > 2 * 900
    assert later.reused_prompt_tokens > 4 * 900
    assert later.evaluated_prompt_tokens < 4 * 50
    assert report.cached_prompt_tokens == stats.reused_prompt_tokens
    assert slot_log_path(tmp_path / "engine.log", 1).is_file()
    assert not engine.running
