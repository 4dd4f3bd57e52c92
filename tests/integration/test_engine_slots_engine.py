"""Prefix slots on llama-cpp-python with the small model: two agents' prompts alternate, and
each agent's fixed prefix is computed once, in its own slot, instead of once per question;
and with repeatable prompts a request answers the same way whatever the slots served before."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import EngineSettings, default_cache_dir, load_config
from grse_graph.llm.engine_slots import EngineSlots, slot_log_path
from grse_graph.llm.roles import ModelRoles
from tests.integration.engine_support import long_prefix

pytestmark = pytest.mark.engine


SETTINGS = EngineSettings(
    model="small",
    engine="llama-cpp-python",
    n_ctx=4096,
    threads=2,
    n_parallel=2,
    cache_dir=default_cache_dir(),
)


def test_alternating_agents_reuse_their_own_prefix(tmp_path: Path) -> None:
    # Routing alone: no priming requests between the questions.
    settings = SETTINGS.model_copy(update={"repeatable_prompts": False})
    prefixes = {agent: long_prefix(agent) for agent in ("harbour", "orchard")}
    with EngineSlots(settings, log_path=tmp_path / "engine.log") as engine:
        assert len(set(engine.slot_urls)) == 2
        ledger = UsageLedger()
        ledger.attach_engine_stats(engine.prompt_eval_stats)
        roles = ModelRoles(
            load_config(env={}).model_copy(update={"engine": settings}),
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


def test_a_request_is_computed_the_same_way_after_any_history(tmp_path: Path) -> None:
    harbour, orchard = long_prefix("harbour"), long_prefix("orchard")
    with EngineSlots(SETTINGS, log_path=tmp_path / "engine.log") as engine:
        roles = ModelRoles(
            load_config(env={}),
            UsageLedger(),
            engine_url=engine.base_url,
            engine_slots={engine.base_url: engine.slot_urls},
        )
        with roles:
            # (llama-cpp-python gives no logprobs without every prompt token's logits.)
            model = roles.chat("actor", max_tokens=24)

            def ask(prefix: str, item: int) -> str:
                question = HumanMessage(content=f"Which room holds item {item}?")
                return str(model.invoke([SystemMessage(content=prefix), question]).content)

            on_a_fresh_engine = ask(harbour, 7)
            # Without priming, the next request would reuse "item 7" from the one before it
            # and compute the rest in other batches.
            ask(orchard, 7)
            ask(harbour, 71)
            before = engine.prompt_eval_stats()
            after_a_similar_question = ask(harbour, 7)
            one_request = engine.prompt_eval_stats() - before
            assert asyncio.run(roles.clear_prefix_caches()) == 2
            after_clearing = ask(harbour, 7)
    assert after_a_similar_question == on_a_fresh_engine
    assert after_clearing == on_a_fresh_engine
    # The priming request and the request: each reuses the fixed prefix and computes the rest.
    assert one_request.completions == 2
    assert one_request.reused_prompt_tokens > 2 * 900
    assert one_request.evaluated_prompt_tokens < 60
