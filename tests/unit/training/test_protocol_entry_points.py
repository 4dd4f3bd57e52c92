"""Issue 26 point 6: one protocol behind every entry point (CLI train, Studio, the demo's
`learning_config`, the Python API) and the protocol values they fill in."""

from __future__ import annotations

from typing import Any

import pytest

from grse_graph.api.config import train_config as api_train_config
from grse_graph.errors import ConfigError
from grse_graph.llm.provider import SamplingSettings
from grse_graph.methods.registry import METHOD_NAMES
from grse_graph.studio import train_config as studio_train_config
from grse_graph.training.config import TrainConfig, protocol_train_config
from grse_graph.training.demo import learning_config, settings_read_by

GEMMA = {"base_url": "http://127.0.0.1:9/v1", "model": "google/gemma-3-27b-it"}


def test_studio_training_context_gets_the_task_protocol_and_the_actor_family_top_k() -> None:
    context: dict[str, Any] = {"task": "hotpotqa", "data": "hotpot.json", "actor": GEMMA}
    config = studio_train_config(context, {})
    assert config.training_sampling == SamplingSettings.training(top_k=64)
    # HotpotQA validation samples with the training parameters (App. A), not greedily.
    assert config.validation_sampling == config.training_sampling
    assert config.batch_size == 20


def test_learning_config_gets_the_task_protocol() -> None:
    config = learning_config("grse", task="hotpotqa", data="hotpot.json", training_top_k=64)
    assert config.training_sampling == SamplingSettings.training(top_k=64)
    assert config.validation_sampling == config.training_sampling
    # The demo's own sizes stay explicit values over the protocol's.
    assert config.batch_size == 2
    assert learning_config().validation_sampling == SamplingSettings.greedy()


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_learning_config_builds_for_every_method(method: str) -> None:
    # benchmarks/methods.py builds every method's config here; a demo default the method
    # does not read (SkillMAS's validation size) is left out, not refused.
    assert learning_config(method).method.name == method


def test_learning_config_still_refuses_an_unread_setting_the_caller_passes() -> None:
    with pytest.raises(ConfigError, match="skillmas does not read setting 'validation_size'"):
        learning_config("skillmas", validation_size=3)


def test_every_entry_point_builds_the_same_config_from_the_same_values() -> None:
    values = {"task": "locomo", "data": "locomo10.json", "category": "temporal"}
    expected = protocol_train_config(values, "test", training_top_k=64)
    studio = studio_train_config({**values, "actor": GEMMA}, {})
    api = api_train_config(
        "locomo",
        {k: v for k, v in values.items() if k != "task"},
        None,
        methods={},
        training_top_k=lambda: 64,
    )
    assert studio == expected
    assert api == expected
    assert (expected.batch_size, expected.validation_sampling) == (24, SamplingSettings.greedy())


def test_maskills_decodes_the_actor_greedily_throughout_on_locomo() -> None:
    # Its released runner (App. A) decodes greedily in training too; GRSE samples at T = 1.0.
    maskills = protocol_train_config(
        {"task": "locomo", "category": "temporal", "method": "maskills"}, "test", training_top_k=20
    )
    assert maskills.training_sampling == SamplingSettings.greedy()
    assert maskills.validation_sampling == SamplingSettings.greedy()
    grse = protocol_train_config(
        {"task": "locomo", "method": {"name": "grse"}}, "test", training_top_k=20
    )
    assert grse.training_sampling == SamplingSettings.training(top_k=20)
    studio = studio_train_config(
        {"task": "locomo", "category": "temporal", "train": {"method": "maskills"}}, {}
    )
    assert studio.training_sampling == SamplingSettings.greedy()
    # An explicit value still wins.
    sampled = protocol_train_config(
        {
            "task": "locomo",
            "method": "maskills",
            "training_sampling": SamplingSettings.training(top_k=20),
        },
        "test",
        training_top_k=20,
    )
    assert sampled.training_sampling.temperature == 1.0


def test_a_stored_config_is_used_as_it_is() -> None:
    stored = TrainConfig(task="hotpotqa", batch_size=7)
    assert api_train_config("hotpotqa", stored, None, methods={}, training_top_k=lambda: 64) == (
        stored
    )


def test_settings_read_by_keeps_only_the_settings_the_method_reads() -> None:
    loop = {"validation_size": 2, "validation_repeats": 1, "batch_size": 3}
    assert settings_read_by("skillmas", loop) == {"batch_size": 3}
    assert settings_read_by("grse", loop) == loop
