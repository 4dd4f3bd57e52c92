"""Embedded roles on their own models: one engine per model, each role routed to its engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from grse_graph.errors import ConfigError
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.roles import ModelRoles
from grse_graph.training.session import engine_log_path


def test_roles_without_engine_model_share_the_engine_model() -> None:
    config = load_config(env={})
    assert config.embedded_models() == ["default"]
    assert config.embedded_model("critic") == "default"


def test_critic_and_optimizer_on_medium_need_a_second_engine() -> None:
    config = load_config(
        env={"GRSE_CRITIC_ENGINE_MODEL": "medium"},
        overrides={"optimizer.engine_model": "medium"},
    )
    assert config.embedded_models() == ["default", "medium"]
    assert config.model_name("critic") == "qwen2.5-coder-1.5b"
    assert config.model_name("actor") == "qwen2.5-coder-0.5b"


def test_a_remote_actor_leaves_only_the_embedded_roles_models() -> None:
    config = load_config(
        env={},
        overrides={"actor.base_url": "http://gpu:8000/v1", "critic.engine_model": "small"},
    )
    assert config.embedded_models() == ["small", "default"]


def test_each_role_talks_to_the_engine_of_its_model() -> None:
    config = load_config(env={}, overrides={"critic.engine_model": "medium"})
    urls = {"default": "http://127.0.0.1:1/v1", "medium": "http://127.0.0.1:2/v1"}
    with ModelRoles(config, UsageLedger(), engine_url=urls, env={}) as roles:
        assert roles.base_url("actor") == urls["default"]
        assert roles.base_url("critic") == urls["medium"]
        assert roles.base_url("optimizer") == urls["default"]


def test_a_role_whose_model_has_no_engine_is_a_one_line_error() -> None:
    config = load_config(env={}, overrides={"critic.engine_model": "medium"})
    with (
        ModelRoles(config, UsageLedger(), engine_url={"default": "http://x/v1"}, env={}) as roles,
        pytest.raises(ConfigError, match=r"embedded model .medium.*running: default"),
    ):
        roles.base_url("critic")


def test_the_second_engine_logs_beside_the_first(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    assert engine_log_path(log, "default", first=True) == log
    assert engine_log_path(log, "medium", first=False) == tmp_path / "engine-medium.log"
    assert engine_log_path(None, "medium", first=False) is None
