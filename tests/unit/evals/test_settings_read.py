"""Every value of `settings.json` a run depends on is read by the configurations the tables
make: a copy of the paper folder with one value changed, passed with --paper-dir, changes the
planned run's `TrainConfig`, its caps or its baseline settings (no engine, no data)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from grse_graph.methods.grse.payload import critic_instruction_tokens
from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.deviations import deviations
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import context_from, parser_for
from grse_graph.reproduce.settings import default_paper_dir
from grse_graph.training.config import TrainConfig

NO_DATA = ["--data-hotpotqa", "/nonexistent/h.json", "--data-locomo", "/nonexistent/l.json"]
REMOTE = """
[actor]
base_url = "http://127.0.0.1:9/v1"
model = "{actor}"
[critic]
base_url = "http://127.0.0.1:9/v1"
model = "Qwen/Qwen3.8-27B"
[optimizer]
base_url = "http://127.0.0.1:9/v1"
model = "Qwen/Qwen3.8-27B"
"""

Change = Callable[[dict[str, Any]], None]


def paper_copy(tmp_path: Path, change: Change | None = None) -> Path:
    """The package's paper folder copied to `tmp_path`, with `change` applied to settings.json."""
    folder = tmp_path / "paper"
    shutil.copytree(default_paper_dir(), folder)
    if change is not None:
        path = folder / "settings.json"
        settings = json.loads(path.read_text(encoding="utf-8"))
        change(settings)
        path.write_text(json.dumps(settings), encoding="utf-8")
    return folder


def table_context(
    tmp_path: Path,
    table: str,
    change: Change | None = None,
    *,
    actor: str | None = "Qwen/Qwen3.8-27B",
    paper_mode: bool = True,
) -> TableContext:
    """The table's context as its script builds it, from --paper-dir (a changed copy) and, for
    `actor`, a TOML with every role on a remote endpoint (None: the embedded engine), in the
    paper's mode (False: with the project's additions)."""
    args = ["--paper-dir", str(paper_copy(tmp_path, change)), "--commit", "c0ffee0"]
    args += ["--out", str(tmp_path / "out"), *NO_DATA]
    if actor is not None:
        toml = tmp_path / "roles.toml"
        toml.write_text(REMOTE.format(actor=actor), encoding="utf-8")
        args += ["--config", str(toml)]
    definition = TABLES[table]
    ctx = context_from(definition, parser_for(definition).parse_args(args), Console(quiet=True))
    return replace(ctx, paper_mode=paper_mode)


def planned(ctx: TableContext, table: str) -> list[RunSpec]:
    return TABLES[table].plan(ctx)


def train_config(
    runs: list[RunSpec], method: str = "grse", category: str | None = None
) -> TrainConfig:
    """The config of the first planned training run of `method` (and LoCoMo `category`)."""
    spec = next(
        s
        for s in runs
        if s.kind == "train"
        and s.method == method
        and s.variant == "default"
        and (category is None or s.category == category)
    )
    return TrainConfig.model_validate(spec.params["config"])


def _set(*path: str, value: Any) -> Change:
    def change(settings: dict[str, Any]) -> None:
        node = settings
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


Read = Callable[[TrainConfig], Any]
CASES: list[tuple[str, str, tuple[str, ...], Any, Read]] = [
    ("delta", "table1", ("table8", "delta"), 0.05, lambda c: c.delta),
    ("T", "table1", ("table8", "iterations"), 4, lambda c: c.iterations),
    ("G", "table1", ("table8", "group_size"), 3, lambda c: c.method.group_size),  # type: ignore[union-attr]
    (
        "prune period",
        "table2",
        ("table8", "schedule", "locomo", "prune_every"),
        4,
        lambda c: c.operator_schedule().prune_every,
    ),
    (
        "consolidate period",
        "table1",
        ("table8", "schedule", "hotpotqa", "consolidate_every"),
        3,
        lambda c: c.operator_schedule().consolidate_every,
    ),
    ("L", "table2", ("table8", "library_limit", "locomo"), 3, lambda c: c.library_limit),
    (
        "L choice",
        "table1",
        ("choices", "library_limit.hotpotqa", "value"),
        5,
        lambda c: c.library_limit,
    ),
    ("batch", "table2", ("table8", "batch_size", "locomo"), 16, lambda c: c.batch_size),
    (
        "batch choice",
        "table1",
        ("choices", "batch_size.hotpotqa", "value"),
        25,
        lambda c: c.batch_size,
    ),
    ("H", "table1", ("table8", "validation_repeats"), 2, lambda c: c.validation_repeats),
    (
        "H choice",
        "table1",
        ("choices", "validation_repeats", "value"),
        3,
        lambda c: c.validation_repeats,
    ),
    ("actor cap", "table1", ("table8", "caps", "actor"), 3000, lambda c: c.actor_max_tokens),
    (
        "critic cap",
        "table1",
        ("table8", "caps", "critic"),
        3500,
        lambda c: c.method.critic_max_tokens,  # type: ignore[union-attr]
    ),
    (
        "refine cap",
        "table1",
        ("table8", "caps", "refine"),
        700,
        lambda c: c.method.operators.refine_max_tokens,  # type: ignore[union-attr]
    ),
    (
        "induce cap",
        "table1",
        ("table8", "caps", "induce"),
        900,
        lambda c: c.method.operators.induce_max_tokens,  # type: ignore[union-attr]
    ),
    (
        "consolidate cap",
        "table1",
        ("table8", "caps", "consolidate"),
        1000,
        lambda c: c.method.operators.consolidate_max_tokens,  # type: ignore[union-attr]
    ),
    (
        "skill body cap",
        "table1",
        ("table8", "caps", "skill_body"),
        600,
        lambda c: c.method.operators.body_token_cap,  # type: ignore[union-attr]
    ),
    (
        "top_p",
        "table1",
        ("table8", "training_sampling", "top_p"),
        0.9,
        lambda c: (c.training_sampling.top_p, c.validation_sampling.top_p),
    ),
    (
        "temperature",
        "table2",
        ("table8", "training_sampling", "temperature"),
        0.8,
        lambda c: c.training_sampling.temperature,
    ),
    (
        "top_k qwen",
        "table1",
        ("table8", "training_sampling", "top_k", "qwen"),
        30,
        lambda c: c.training_sampling.top_k,
    ),
    (
        "validation decoding",
        "table1",
        ("table8", "validation_decoding", "hotpotqa"),
        "greedy",
        lambda c: c.validation_sampling.temperature == 0.0 and "greedy",
    ),
]


@pytest.mark.parametrize(
    ("table", "path", "value", "read"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_one_changed_value_reaches_the_planned_training_config(
    tmp_path: Path, table: str, path: tuple[str, ...], value: Any, read: Read
) -> None:
    before = read(train_config(planned(table_context(tmp_path / "a", table), table)))
    ctx = table_context(tmp_path / "b", table, _set(*path, value=value))
    after = read(train_config(planned(ctx, table)))
    expected = (value, value) if isinstance(after, tuple) else value
    assert before != expected and after == expected


def test_the_caps_reach_the_runs_endpoints_and_ids(tmp_path: Path) -> None:
    runs = planned(table_context(tmp_path / "a", "table1"), "table1")
    changed = planned(
        table_context(tmp_path / "b", "table1", _set("table8", "caps", "actor", value=3000)),
        "table1",
    )
    empty = next(s for s in runs if s.kind == "eval")
    empty_changed = next(s for s in changed if s.kind == "eval")
    assert empty.params["models"]["actor"]["max_tokens"] == 4096
    assert empty_changed.params["models"]["actor"]["max_tokens"] == 3000
    assert empty.run_id != empty_changed.run_id


def test_the_family_top_k_and_the_choice_for_another_family(tmp_path: Path) -> None:
    gemma = table_context(tmp_path / "g", "table1", actor="google/gemma-4-31B-it")
    assert train_config(planned(gemma, "table1")).training_sampling.top_k == 64
    other = table_context(
        tmp_path / "o",
        "table1",
        _set("choices", "training_sampling.top_k.other", "value", value=33),
        actor="mistralai/Mistral-7B-Instruct",
    )
    runs = planned(other, "table1")
    assert train_config(runs).training_sampling.top_k == 33
    assert any("neither family" in line and "top-k 33" in line for line in deviations(other, runs))


def test_maskills_on_locomo_trains_greedily_as_greedy_training_says(tmp_path: Path) -> None:
    ctx = table_context(tmp_path / "a", "table2")
    assert train_config(planned(ctx, "table2"), "maskills").training_sampling.temperature == 0.0
    sampled = table_context(tmp_path / "b", "table2", _set("table8", "greedy_training", value={}))
    config = train_config(planned(sampled, "table2"), "maskills")
    assert config.training_sampling.temperature == 1.0


@pytest.mark.parametrize(
    ("table", "method", "key", "path", "value"),
    [
        ("table1", "cot-sc", "samples", ("cot_sc_samples",), 7),
        ("table1", "cot-sc", "temperature", ("cot_sc_temperature",), 0.5),
        ("table1", "self-refine", "rounds", ("self_refine_rounds",), 2),
        ("table2", "full-context", "max_tokens", ("full_context_answer_tokens",), 48),
    ],
)
def test_the_baselines_settings_reach_their_runs(
    tmp_path: Path, table: str, method: str, key: str, path: tuple[str, ...], value: Any
) -> None:
    def setting(ctx: TableContext) -> Any:
        spec = next(s for s in planned(ctx, table) if s.method == method)
        return spec.params["settings"][key]

    assert setting(table_context(tmp_path / "a", table)) != value
    changed = table_context(tmp_path / "b", table, _set("table8", "baselines", *path, value=value))
    assert setting(changed) == value


def test_the_payload_budget_is_the_context_less_the_cap_and_the_instructions(
    tmp_path: Path,
) -> None:
    ctx = table_context(tmp_path / "a", "table1", _set("table8", "context_length", value=32768))
    runs = planned(ctx, "table1")
    config = train_config(runs)
    instructions = critic_instruction_tokens(structured=True, schema_in_prompt=True)
    assert config.method.payload_limits.max_tokens == 32768 - 4000 - instructions  # type: ignore[union-attr]
    assert any("payload budget" in line and "32,768" in line for line in deviations(ctx, runs))


def test_the_embedded_engine_budget_is_declared_in_the_header(tmp_path: Path) -> None:
    ctx = table_context(tmp_path, "table1", actor=None)
    runs = planned(ctx, "table1")
    config = train_config(runs)
    llm = ctx.actors[0].llm
    budget = config.method.payload_limits.max_tokens  # type: ignore[union-attr]
    assert budget is not None and budget < llm.engine.n_ctx - llm.critic.max_tokens
    line = next(line for line in deviations(ctx, runs) if "GRSE critic payload budget" in line)
    assert "embedded engine's context 8,192" in line and f"{budget:,}" in line


def test_the_choices_used_are_printed_with_their_reasons(tmp_path: Path) -> None:
    ctx = table_context(tmp_path, "table1")
    header = deviations(ctx, planned(ctx, "table1"))
    for key in ("batch_size.hotpotqa = 20", "library_limit.hotpotqa = 4", "validation_repeats = 1"):
        assert any(line.startswith(key) and "not in the paper's text" in line for line in header)


def test_the_open_domain_inconsistency_is_declared_only_where_locomo_runs(
    tmp_path: Path,
) -> None:
    locomo = table_context(tmp_path / "l", "table2")
    header = deviations(locomo, planned(locomo, "table2"))
    (line,) = [line for line in header if "open-domain test questions" in line]
    assert "grse.txt:350" in line and "52" in line and "54" in line
    hotpot = table_context(tmp_path / "h", "table1")
    assert not any("disagrees" in line for line in deviations(hotpot, planned(hotpot, "table1")))


def test_the_paper_mode_runs_call_tools_as_the_settings_say(tmp_path: Path) -> None:
    ctx = table_context(tmp_path / "a", "table2")
    runs = planned(ctx, "table2")
    evals = [s for s in runs if s.kind == "eval"]
    assert evals and {s.params["tool_protocol"] for s in evals} == {"text"}
    assert train_config(runs).tool_protocol == "text"
    changed = table_context(
        tmp_path / "b", "table2", _set("table8", "tool_protocol", value="function")
    )
    runs = planned(changed, "table2")
    assert {s.params["tool_protocol"] for s in runs if s.kind == "eval"} == {"function"}
    assert train_config(runs).tool_protocol == "function"
    additions = table_context(tmp_path / "c", "table2", paper_mode=False)
    runs = planned(additions, "table2")
    assert {s.params["tool_protocol"] for s in runs if s.kind == "eval"} == {"function"}
    assert train_config(runs).tool_protocol == "function"
