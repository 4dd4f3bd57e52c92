"""Embedded roles on two models: a session starts one engine per model, routes each role to its
engine, sums both engines' statistics and stops both."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from grse_graph.llm.config import default_cache_dir, load_config
from grse_graph.llm.models import resolve_model
from grse_graph.training.session import open_endpoints

pytestmark = pytest.mark.engine


def test_critic_on_its_own_model_gets_its_own_engine(tmp_path: Path) -> None:
    # The small model's file by path counts as another model: two engines, cheaply.
    small_file = resolve_model("small", default_cache_dir())
    llm = load_config(
        env={},
        overrides={
            "engine.model": "small",
            "engine.n_ctx": 2048,
            "critic.engine_model": str(small_file),
        },
    )
    with open_endpoints(llm, engine_log=tmp_path / "engine.log") as endpoints:
        assert list(endpoints.engines) == ["small", str(small_file)]
        actor_url = endpoints.roles.base_url("actor")
        critic_url = endpoints.roles.base_url("critic")
        assert actor_url != critic_url
        assert endpoints.roles.base_url("optimizer") == actor_url
        for role in ("actor", "critic"):
            endpoints.roles.chat(role, max_tokens=8).invoke([HumanMessage(content="Say hi.")])
        per_engine = [
            engine.prompt_eval_stats().completions for engine in endpoints.engines.values()
        ]
        assert all(count >= 1 for count in per_engine)
        assert endpoints.prompt_eval_stats().completions == sum(per_engine)
        assert endpoints.ledger.report().engine is not None
        processes = list(endpoints.engines.values())
    assert (tmp_path / "engine.log").is_file()
    assert (tmp_path / f"engine-{small_file.stem}.log").is_file()
    assert not any(engine.running for engine in processes)
