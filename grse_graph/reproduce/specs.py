"""The run specs every table builds its manifest from, so that two tables asking for the same
run (T3 and T9 read T1's training runs, T6 reads T1's and T2's) ask for the same id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grse_graph.api.config import train_config
from grse_graph.llm.config import RoleName
from grse_graph.methods.registry import BUILTIN_METHODS
from grse_graph.training.config import TrainConfig

from .context import Actor, TableContext
from .manifest import RunKind, RunSpec

ROLES: tuple[RoleName, ...] = ("actor", "critic", "optimizer")

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "no-structure": {"structured": False},
    "g1": {"group_size": 1},
    "dapo": {"dapo_filter": True},
    "labels": {"with_labels": True},
}
"""GRSE's variants (§5.5, Table 10) as method-section changes."""

SAMPLED_BASELINES = ("cot-sc",)
"""Baselines that sample (one run per seed); the others decode greedily (one run)."""


def models(actor: Actor) -> dict[str, Any]:
    """What of the endpoints changes a run's answers, for its id: each role's model and cap
    (not its URL: the same model served elsewhere makes the same run)."""
    llm = actor.llm
    return {
        role: {
            "model": llm.model_name(role),
            "max_tokens": llm.role(role).max_tokens,
        }
        for role in ROLES
    }


def fixture_params(ctx: TableContext, task: str) -> dict[str, Any]:
    """What of `--fixtures` changes a run of `task`, for its id (nothing on the benchmarks'
    data): a run on a fixture never shares its id with one on the benchmark."""
    if ctx.fixtures is None or task not in ctx.task_options:
        return {}
    return {"data": "fixtures", "task_options": ctx.task_options[task]}


def _run(
    ctx: TableContext, actor: Actor, kind: RunKind, task: str, params: dict[str, Any], **spec: Any
) -> RunSpec:
    """A run of `task` by `actor` at this commit: its `params` with the actor's models and the
    fixtures it reads, if any (all three part of its id); `spec` the rest of its `RunSpec`."""
    every = {**params, "models": models(actor), **fixture_params(ctx, task)}
    return RunSpec(kind=kind, task=task, actor=actor.label, commit=ctx.commit, params=every, **spec)


def _test_split(ctx: TableContext) -> dict[str, Any]:
    """The params of a run on the test split (the first `test_limit()` questions)."""
    return {"split": "test", "limit": ctx.test_limit()}


def eval_spec(ctx: TableContext, actor: Actor, task: str, category: str | None = None) -> RunSpec:
    """The team with empty libraries on the test split (greedy, so one run without a seed)."""
    return _run(ctx, actor, "eval", task, _test_split(ctx), category=category, method="empty")


def transfer_spec(
    ctx: TableContext, actor: Actor, libraries_from: RunSpec, task: str, category: str | None = None
) -> RunSpec:
    """The team with the libraries trained by `libraries_from` on the test split of `task`,
    one run per training seed (its variant names where the libraries come from)."""
    return _run(
        ctx,
        actor,
        "eval",
        task,
        {**_test_split(ctx), "libraries_from": libraries_from.run_id},
        category=category,
        method="empty",
        variant=f"from-{libraries_from.task}-{libraries_from.category or 'all'}",
        seed=libraries_from.seed,
        needs=(libraries_from.run_id,),
    )


def planted_spec(
    ctx: TableContext,
    actor: Actor,
    task: str,
    planted: str,
    category: str | None = None,
    kinds: tuple[str, ...] | None = None,
) -> RunSpec:
    """The team with the planted library of the JSON file `planted` on the test split (of
    `category`); with `kinds`, only the planted skills of those kinds (the helpful skills
    alone: variant `helpful-alone`)."""
    params: dict[str, Any] = {**_test_split(ctx), "planted": planted}
    variant = "default"
    if kinds is not None:
        params["planted_kinds"] = list(kinds)
        variant = "-".join(kinds) + "-alone"
    return _run(
        ctx, actor, "eval", task, params, category=category, method="planted", variant=variant
    )


def baseline_spec(
    ctx: TableContext, actor: Actor, task: str, category: str | None, method: str, seed: int
) -> RunSpec:
    """A single-model baseline on the test split (a seed only where it samples)."""
    return _run(
        ctx,
        actor,
        "baseline",
        task,
        _test_split(ctx),
        category=category,
        method=method,
        seed=seed if method in SAMPLED_BASELINES else None,
    )


def _method_section(ctx: TableContext, method: str, variant: str) -> dict[str, Any]:
    section: dict[str, Any] = {"name": method, **VARIANTS[variant]}
    fields = BUILTIN_METHODS[method].settings_type.model_fields
    if "group_size" in fields and "group_size" not in section:
        section["group_size"] = (
            ctx.settings.smoke.group_size if ctx.smoke else ctx.settings.table8.group_size
        )
    if ctx.smoke:
        caps = ctx.settings.smoke.caps
        if "critic_max_tokens" in fields:
            section["critic_max_tokens"] = caps["critic"]
        if "operators" in fields:
            section["operators"] = {
                "refine_max_tokens": caps["optimizer"],
                "induce_max_tokens": caps["optimizer"],
                "consolidate_max_tokens": caps["optimizer"],
            }
    return section


@dataclass(frozen=True)
class Training:
    """Which training run: its task (and category), method, variant and seed."""

    task: str
    category: str | None
    method: str
    variant: str
    seed: int


def training_config(ctx: TableContext, actor: Actor, training: Training) -> TrainConfig:
    """The run's `TrainConfig`: Table 8's values (or the smoke size) over the task's protocol
    defaults, built the way `grse train` builds it."""
    task, category, variant = training.task, training.category, training.variant
    t8 = ctx.settings.table8
    table: dict[str, Any] = {
        "task": task,
        "data": ctx.data.get(task),
        "category": category,
        "seed": training.seed,
        "method": _method_section(ctx, training.method, variant),
    }
    if ctx.smoke:
        smoke = ctx.settings.smoke
        table.update(
            iterations=smoke.iterations,
            batch_size=smoke.train_batch,
            validation_size=smoke.validation_questions,
        )
    else:
        table.update(
            iterations=t8.iterations,
            delta=t8.delta,
            validation_repeats=t8.validation_repeats
            or ctx.settings.chosen("validation_repeats")
            or 1,
        )
        batch = ctx.settings.batch_size(task, category)
        if batch is not None:
            table["batch_size"] = batch
    if ctx.paper_mode:
        table["paper_mode"] = True
    loop = {k: v for k, v in ctx.train_overrides.items() if k != "group_size"}
    table.update(loop)
    group = ctx.train_overrides.get("group_size")
    if group is not None and "group_size" in table["method"] and variant != "g1":
        table["method"]["group_size"] = group  # G = 1 stays the variant itself
    return train_config(
        task,
        table,
        None,
        methods=BUILTIN_METHODS,
        training_top_k=actor.llm.training_top_k,
    )


def train_spec(
    ctx: TableContext,
    actor: Actor,
    task: str,
    category: str | None,
    method: str,
    variant: str,
    seed: int,
    *,
    start: RunSpec | None = None,
    planted: str | None = None,
    config: TrainConfig | None = None,
) -> RunSpec:
    """Train and test: its starting libraries' test is the eval run `start` when given;
    `config` replaces the Table 8 config (the repair study's own)."""
    if config is None:
        config = training_config(ctx, actor, Training(task, category, method, variant, seed))
    params: dict[str, Any] = {
        "config": config.model_dump(mode="json"),
        "test_limit": ctx.test_limit(),
        "start_test_from": start.run_id if start is not None else None,
        "planted": planted,
    }
    return _run(
        ctx,
        actor,
        "train",
        task,
        params,
        category=category,
        method=method,
        variant=variant if planted is None else f"{variant}-planted",
        seed=seed,
        needs=(start.run_id,) if start is not None else (),
    )
