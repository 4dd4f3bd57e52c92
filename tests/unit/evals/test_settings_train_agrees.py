"""`grse train --paper-mode` and the tables of `evals/` agree on every value the paper fixes:
the config `grse train` builds from its flags (the task's protocol defaults) and the one a
table builds from `settings.json`, compared value by value with the caps each role runs with,
for each task, LoCoMo setting and method the tables train."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from grse_graph.cli.train_setup import build_train_config
from grse_graph.llm import LLMConfig, load_config
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import context_from, parser_for
from grse_graph.reproduce.specs import Training, training_config
from grse_graph.training.config import TrainConfig
from tests.unit.evals.test_settings_read import NO_DATA, REMOTE


def paper_fixed(config: TrainConfig, llm: LLMConfig) -> dict[str, Any]:
    """The values the paper fixes, as the run uses them (a cap left to the role: the role's)."""
    method: Any = config.method
    operators = method.operators
    return {
        "T (iterations)": config.iterations,
        "G (group_size)": method.group_size if hasattr(method, "group_size") else 1,
        "batch_size": config.batch_size,
        "delta": config.delta,
        "L (library_limit)": config.library_limit,
        "H (validation_repeats)": config.validation_repeats,
        "schedule": config.operator_schedule().model_dump(),
        "training_sampling": config.training_sampling.model_dump(),
        "validation_sampling": config.validation_sampling.model_dump(),
        "actor cap": config.actor_max_tokens or llm.actor.max_tokens,
        "critic cap": method.critic_max_tokens or llm.critic.max_tokens,
        "refine cap": operators.refine_max_tokens,
        "induce cap": operators.induce_max_tokens,
        "consolidate cap": operators.consolidate_max_tokens,
        "skill body cap": operators.body_token_cap,
        "paper_mode": config.paper_mode,
    }


def differences(train: dict[str, Any], evals: dict[str, Any]) -> list[str]:
    return [
        f"{key}: grse train {train[key]!r} != evals {evals[key]!r}"
        for key in train
        if train[key] != evals[key]
    ]


def evals_context(tmp_path: Path, toml: Path) -> TableContext:
    definition = TABLES["table1"]
    args = ["--config", str(toml), "--commit", "c0ffee0", "--out", str(tmp_path), *NO_DATA]
    return context_from(definition, parser_for(definition).parse_args(args), Console(quiet=True))


@pytest.mark.parametrize("actor", ["Qwen/Qwen3.8-27B", "google/gemma-4-31B-it"])
@pytest.mark.parametrize(
    ("task", "category"),
    [("hotpotqa", None), ("locomo", "single-hop"), ("locomo", "open-domain"), ("locomo", None)],
)
@pytest.mark.parametrize("method", ["grse", "maskills"])
def test_grse_train_and_evals_agree_on_the_paper_values(
    tmp_path: Path, actor: str, task: str, category: str | None, method: str
) -> None:
    toml = tmp_path / "roles.toml"
    toml.write_text(REMOTE.format(actor=actor), encoding="utf-8")
    llm = load_config(toml, env={})
    flags = {"task": task, "category": category, "method": method, "paper_mode": True}
    given = {key: value for key, value in flags.items() if value is not None}
    train = build_train_config({}, given, "flags", training_top_k=llm.training_top_k())
    ctx = replace(evals_context(tmp_path / "out", toml), paper_mode=True)
    evals = training_config(
        ctx, Actor(ctx.actors[0].label, llm), Training(task, category, method, "default", 0)
    )
    found = differences(paper_fixed(train, llm), paper_fixed(evals, llm))
    assert not found, "grse train and evals/ disagree:\n" + "\n".join(found)


def test_the_comparison_reports_a_difference_readably() -> None:
    base = {"delta": 0.02, "L (library_limit)": 4}
    assert differences(base, {**base, "delta": 0.05}) == ["delta: grse train 0.02 != evals 0.05"]
