"""Configuration layers: defaults < TOML < environment < overrides; one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from grse_graph.errors import ConfigError
from grse_graph.llm.config import ENGINE_MODEL_ALIAS, load_config


def test_defaults_point_at_the_embedded_engine_with_cpu_caps(tmp_path: Path) -> None:
    config = load_config(env={"GRSE_CACHE_DIR": str(tmp_path)})
    assert all(config.role(role).base_url is None for role in ("actor", "critic", "optimizer"))
    assert config.actor.model == ENGINE_MODEL_ALIAS
    assert (config.actor.max_tokens, config.critic.max_tokens, config.optimizer.max_tokens) == (
        512,
        1024,
        800,
    )
    assert config.engine.n_ctx == 8192
    assert config.engine.port == 0
    assert config.engine.host == "127.0.0.1"
    assert config.engine.cache_dir == tmp_path
    assert config.uses_embedded_engine()


def test_cache_dir_defaults_to_home_cache_without_variable() -> None:
    config = load_config(env={})
    assert config.engine.cache_dir == Path.home() / ".cache" / "grse-graph"


def test_precedence_overrides_then_env_then_toml(tmp_path: Path) -> None:
    toml = tmp_path / "grse.toml"
    toml.write_text(
        '[actor]\nbase_url = "http://toml:8000/v1"\nmodel = "toml-model"\ntop_k = 5\n'
        '[critic]\nmodel = "critic-toml"\n[engine]\nthreads = 3\n',
        encoding="utf-8",
    )
    env = {"GRSE_ACTOR_MODEL": "env-model", "GRSE_ACTOR_TOP_K": "7", "GRSE_ENGINE_THREADS": "1"}
    config = load_config(toml, env=env, overrides={"actor.top_k": 9, "engine.threads": None})
    assert config.actor.base_url == "http://toml:8000/v1"
    assert config.actor.model == "env-model"
    assert config.actor.top_k == 9
    assert config.critic.model == "critic-toml"
    assert config.engine.threads == 1


def test_embedded_marker_resets_a_base_url(tmp_path: Path) -> None:
    toml = tmp_path / "grse.toml"
    toml.write_text('[critic]\nbase_url = "http://remote/v1"\n', encoding="utf-8")
    config = load_config(toml, env={"GRSE_CRITIC_BASE_URL": "embedded"})
    assert config.critic.base_url is None


def test_bad_env_value_names_key_and_source() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(env={"GRSE_CRITIC_MAX_TOKENS": "lots"})
    message = str(raised.value)
    assert "critic.max_tokens" in message
    assert "GRSE_CRITIC_MAX_TOKENS" in message
    assert "\n" not in message


def test_out_of_range_override_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"actor\.temperature.*override actor\.temperature"):
        load_config(env={}, overrides={"actor.temperature": 5.0})


def test_unknown_toml_key_and_section(tmp_path: Path) -> None:
    toml = tmp_path / "grse.toml"
    toml.write_text("[actor]\ntemprature = 0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key actor\.temprature"):
        load_config(toml, env={})
    toml.write_text("[judge]\nmodel = 'x'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown section \[judge\]"):
        load_config(toml, env={})


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    toml = tmp_path / "grse.toml"
    toml.write_text("[actor\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(toml, env={})
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml", env={})


def test_bad_override_key() -> None:
    with pytest.raises(ConfigError, match=r"section\.field"):
        load_config(env={}, overrides={"model": "x"})
    with pytest.raises(ConfigError, match=r"unknown key engine\.colour"):
        load_config(env={}, overrides={"engine.colour": "x"})


def test_engine_choice_is_validated() -> None:
    with pytest.raises(ConfigError, match=r"engine\.engine"):
        load_config(env={"GRSE_ENGINE_ENGINE": "ollama"})


def test_remote_roles_get_the_paper_caps_and_explicit_caps_always_win(tmp_path: Path) -> None:
    remote = "http://gpu:8000/v1"
    config = load_config(
        env={
            "GRSE_CACHE_DIR": str(tmp_path),
            "GRSE_ACTOR_BASE_URL": remote,
            "GRSE_CRITIC_BASE_URL": remote,
            "GRSE_OPTIMIZER_BASE_URL": remote,
        }
    )
    assert (config.actor.max_tokens, config.critic.max_tokens, config.optimizer.max_tokens) == (
        4096,
        4000,
        1200,
    )
    embedded = load_config(env={"GRSE_CACHE_DIR": str(tmp_path), "GRSE_ACTOR_MAX_TOKENS": "2048"})
    assert embedded.actor.max_tokens == 2048
    assert embedded.critic.max_tokens == 1024


def test_structured_method_defaults_to_auto_and_is_set_per_role(tmp_path: Path) -> None:
    default = load_config(env={})
    assert {default.role(role).structured_method for role in ("actor", "critic", "optimizer")} == {
        "auto"
    }
    toml = tmp_path / "grse.toml"
    toml.write_text('[optimizer]\nstructured_method = "json_prompt"\n', encoding="utf-8")
    config = load_config(toml, env={"GRSE_CRITIC_STRUCTURED_METHOD": "json_object"})
    assert config.critic.structured_method == "json_object"
    assert config.optimizer.structured_method == "json_prompt"
    assert config.actor.structured_method == "auto"


def test_schemas_are_narrowed_per_agent_unless_a_role_chooses_otherwise() -> None:
    assert load_config(env={}).critic.schema_narrowing == "per_agent"
    plain = load_config(env={"GRSE_CRITIC_SCHEMA_NARROWING": "off"})
    assert plain.critic.schema_narrowing == "off"
    assert plain.optimizer.schema_narrowing == "per_agent"
    with pytest.raises(ConfigError):
        load_config(env={"GRSE_CRITIC_SCHEMA_NARROWING": "true"})


def test_unknown_structured_method_names_key_and_source() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(env={"GRSE_CRITIC_STRUCTURED_METHOD": "xml_tags"})
    message = str(raised.value)
    assert "critic.structured_method" in message
    assert "GRSE_CRITIC_STRUCTURED_METHOD" in message
    assert "\n" not in message
