"""Model-family sampling presets and the thinking-mode switch (GRSE App. A)."""

from __future__ import annotations

import pytest

from grse_graph.llm.config import RoleSettings, load_config, model_preset


@pytest.mark.parametrize(
    ("model", "top_k", "thinking"),
    [
        ("Qwen/Qwen3-8B", 20, True),
        ("qwen2.5-7b-instruct", 20, False),
        ("google/gemma-3-12b-it", 64, False),
    ],
)
def test_family_presets(model: str, top_k: int, thinking: bool) -> None:
    preset = model_preset(model)
    assert preset is not None
    assert (preset.top_k, preset.has_thinking) == (top_k, thinking)


def test_unknown_family_has_no_preset() -> None:
    assert model_preset("smollm2-135m") is None


def test_training_top_k_follows_the_actor_model() -> None:
    env: dict[str, str] = {}
    gemma = load_config(
        env=env, overrides={"actor.base_url": "http://h/v1", "actor.model": "gemma-3-27b-it"}
    )
    assert gemma.training_top_k() == 64
    assert load_config(env=env).training_top_k() == 20  # embedded default: Qwen2.5-Coder
    assert load_config(env=env, overrides={"engine.model": "small"}).training_top_k() == 20


def test_thinking_is_disabled_on_models_that_have_it() -> None:
    auto = RoleSettings(base_url="http://h/v1", model="Qwen3-8B")
    assert auto.chat_template_kwargs("Qwen3-8B") == {"enable_thinking": False}
    assert auto.chat_template_kwargs("gemma-3-12b") is None
    off = RoleSettings(thinking="off")
    assert off.chat_template_kwargs("my-served-alias") == {"enable_thinking": False}
    assert RoleSettings(thinking="on").chat_template_kwargs("Qwen3-8B") == {"enable_thinking": True}
