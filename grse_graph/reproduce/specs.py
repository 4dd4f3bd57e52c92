"""The run specs every table builds its manifest from, so that two tables asking for the same
run (T3 and T9 read T1's training runs, T6 reads T1's and T2's) ask for the same id."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grse_graph.api.config import train_config
from grse_graph.llm.config import LLMConfig, RoleName
from grse_graph.llm.provider import SamplingSettings
from grse_graph.methods.grse.method import GrseSettings
from grse_graph.methods.grse.payload import critic_instruction_tokens, critic_payload_budget
from grse_graph.methods.registry import BUILTIN_METHODS
from grse_graph.team.tool_protocols import FUNCTION_PROTOCOL
from grse_graph.training.config import TrainConfig

from .context import Actor, TableContext
from .manifest import RunKind, RunSpec

ROLES: tuple[RoleName, ...] = ("actor", "critic", "optimizer")
OPERATOR_CAPS = {
    "refine_max_tokens": "refine",
    "induce_max_tokens": "induce",
    "consolidate_max_tokens": "consolidate",
    "body_token_cap": "skill_body",
}
"""Each operator setting and the Table 8 cap it takes."""

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


def paper_caps(ctx: TableContext) -> dict[RoleName, int]:
    """Table 8's cap of each role (the optimizer role's is its largest operator cap; each
    operator call sends its own)."""
    caps = ctx.settings.table8.caps
    return {
        "actor": caps["actor"],
        "critic": caps["critic"],
        "optimizer": max(caps["refine"], caps["induce"], caps["consolidate"]),
    }


def role_caps(ctx: TableContext, actor: Actor) -> dict[RoleName, int]:
    """The cap each role of `actor` runs with: Table 8's on a remote endpoint (`paper_caps`);
    on the embedded engine and at the smoke size the role's own (the CPU's and the smoke's
    caps, which the header declares)."""
    paper = paper_caps(ctx)
    llm = actor.llm
    return {
        role: llm.role(role).max_tokens if ctx.smoke or llm.role(role).embedded else paper[role]
        for role in ROLES
    }


def models(actor: Actor, caps: Mapping[RoleName, int] | None = None) -> dict[str, Any]:
    """What of the endpoints changes a run's answers, for its id: each role's model and the
    cap it runs with (`caps`, default the role's; the executors apply them), not its URL: the
    same model served elsewhere makes the same run."""
    llm = actor.llm
    return {
        role: {
            "model": llm.model_name(role),
            "max_tokens": (caps or {}).get(role, llm.role(role).max_tokens),
        }
        for role in ROLES
    }


def critic_context(ctx: TableContext, actor: Actor) -> int:
    """The critic endpoint's context in tokens: the embedded engine's `n_ctx`, or for a remote
    critic the context the paper serves every model with (Table 8's `context_length`)."""
    llm = actor.llm
    if llm.role("critic").embedded:
        return llm.engine.n_ctx
    return ctx.settings.table8.context_length


def schema_in_prompt(llm: LLMConfig) -> bool:
    """Whether the critic's structured-output method shows the schema in its prompt: all but
    `json_grammar` (`auto` is `json_schema` on the embedded engine, `function_calling` on a
    remote one, both with the schema in the request)."""
    return llm.role("critic").structured_method != "json_grammar"


def critic_instructions(actor: Actor, structured: bool) -> int:
    """Tokens of `actor`'s critic's instructions (`critic_instruction_tokens`)."""
    return critic_instruction_tokens(
        structured=structured, schema_in_prompt=schema_in_prompt(actor.llm)
    )


def payload_budget(ctx: TableContext, actor: Actor, structured: bool) -> int:
    """GRSE's critic payload budget for `actor`'s critic: its context less its cap and its
    instructions (`critic_payload_budget`)."""
    return critic_payload_budget(
        critic_context(ctx, actor),
        role_caps(ctx, actor)["critic"],
        critic_instructions(actor, structured),
    )


def training_sampling(ctx: TableContext, actor: Actor, task: str, method: str) -> SamplingSettings:
    """Table 8's training decoding for `actor`'s model family (greedy for a method that
    decodes greedily on `task`, `greedy_training`)."""
    t8 = ctx.settings.table8
    if method in t8.greedy_training.get(task, []):
        return SamplingSettings.greedy()
    top_k, _ = ctx.settings.training_top_k(actor.llm.model_name("actor"))
    sampling = t8.training_sampling
    return SamplingSettings(temperature=sampling.temperature, top_p=sampling.top_p, top_k=top_k)


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
    every = {**params, "models": models(actor, role_caps(ctx, actor)), **fixture_params(ctx, task)}
    return RunSpec(kind=kind, task=task, actor=actor.label, commit=ctx.commit, params=every, **spec)


def _test_split(ctx: TableContext) -> dict[str, Any]:
    """The params of a run on the test split (the first `test_limit()` questions)."""
    return {"split": "test", "limit": ctx.test_limit()}


def tool_protocol(ctx: TableContext) -> str:
    """How the team's agents call their tools: the paper's (Table 8's `tool_protocol`, text
    calls) in the paper's mode, function calling with the project's additions."""
    return ctx.settings.table8.tool_protocol if ctx.paper_mode else FUNCTION_PROTOCOL


def _team_test(ctx: TableContext) -> dict[str, Any]:
    """The params of a team's run on the test split: the split and the tool protocol."""
    return {**_test_split(ctx), "tool_protocol": tool_protocol(ctx)}


def eval_spec(ctx: TableContext, actor: Actor, task: str, category: str | None = None) -> RunSpec:
    """The team with empty libraries on the test split (greedy, so one run without a seed)."""
    return _run(ctx, actor, "eval", task, _team_test(ctx), category=category, method="empty")


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
        {**_team_test(ctx), "libraries_from": libraries_from.run_id},
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
    params: dict[str, Any] = {**_team_test(ctx), "planted": planted}
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
    """A single-model baseline on the test split (a seed only where it samples), with its
    settings from Table 8's `baselines` (`baseline_settings`)."""
    return _run(
        ctx,
        actor,
        "baseline",
        task,
        {**_test_split(ctx), **baseline_settings(ctx, method)},
        category=category,
        method=method,
        seed=seed if method in SAMPLED_BASELINES else None,
    )


def baseline_settings(ctx: TableContext, method: str) -> dict[str, Any]:
    """The settings of baseline `method` (`make_baseline`'s keywords): CoT-SC's samples and
    temperature, Self-Refine's rounds, the full-context answer cap; none for the others."""
    b = ctx.settings.table8.baselines
    by_method: dict[str, dict[str, Any]] = {
        "cot-sc": {"samples": b.cot_sc_samples, "temperature": b.cot_sc_temperature},
        "self-refine": {"rounds": b.self_refine_rounds},
        "full-context": {"max_tokens": b.full_context_answer_tokens},
    }
    settings = by_method.get(method)
    return {"settings": settings} if settings is not None else {}


def _method_section(ctx: TableContext, actor: Actor, training: Training) -> dict[str, Any]:
    """The method section: the variant's changes, G, the critic's cap, the operators' caps
    (Table 8's or the smoke's, over the method's own operator settings) and GRSE's payload
    budget."""
    method, variant = training.method, training.variant
    section: dict[str, Any] = {"name": method, **VARIANTS[variant]}
    settings_type = BUILTIN_METHODS[method].settings_type
    fields = settings_type.model_fields
    if "group_size" in fields and "group_size" not in section:
        section["group_size"] = (
            ctx.settings.smoke.group_size if ctx.smoke else ctx.settings.table8.group_size
        )
    if "critic_max_tokens" in fields:
        section["critic_max_tokens"] = role_caps(ctx, actor)["critic"]
    if "operators" in fields:
        caps = ctx.settings.table8.caps
        operators = {setting: caps[cap] for setting, cap in OPERATOR_CAPS.items()}
        if ctx.smoke:
            smoke = ctx.settings.smoke.caps["optimizer"]
            operators.update({k: smoke for k in OPERATOR_CAPS if k.endswith("_max_tokens")})
        # Over the method's own operator settings (MASkills' prune threshold is not GRSE's).
        own = settings_type().model_dump()["operators"]  # type: ignore[call-arg]
        section["operators"] = {**own, **operators}
    if settings_type is GrseSettings:
        structured = bool(section.get("structured", True))
        limits = GrseSettings().payload_limits.model_copy(
            update={"max_tokens": payload_budget(ctx, actor, structured)}
        )
        section["payload_limits"] = limits.model_dump()
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
    """The run's `TrainConfig`: every value a run depends on from `settings.json` (Table 8 and
    the package's choices where the text gives none; the smoke's loop sizes at `--smoke`) over
    the task's protocol defaults, built the way `grse train` builds it."""
    task, category, variant = training.task, training.category, training.variant
    settings = ctx.settings
    t8 = settings.table8
    sampling = training_sampling(ctx, actor, task, training.method)
    table: dict[str, Any] = {
        "task": task,
        "data": ctx.data.get(task),
        "category": category,
        "seed": training.seed,
        "method": _method_section(ctx, actor, training),
        "delta": t8.delta,
        "validation_repeats": settings.validation_repeats(),
        "actor_max_tokens": role_caps(ctx, actor)["actor"],
        "training_sampling": sampling,
        "tool_protocol": tool_protocol(ctx),
    }
    decoding = t8.validation_decoding.get(task)
    if decoding is not None:
        table["validation_sampling"] = (
            sampling if decoding == "training" else SamplingSettings.greedy()
        )
    if task in t8.schedule:
        table["schedule"] = t8.schedule[task].model_dump()
    limit = settings.library_limit(task)
    if limit is not None:
        table["library_limit"] = limit
    if ctx.smoke:
        table.update(settings.smoke.loop_sizes())
    else:
        table["iterations"] = t8.iterations
        batch = settings.run_batch_size(task, category)
        if batch is not None:
            table["batch_size"] = batch
    if ctx.paper_mode:
        table["paper_mode"] = True
    loop = {k: v for k, v in ctx.train_overrides.items() if k != "group_size"}
    table.update(loop)
    group = ctx.train_overrides.get("group_size")
    if group is not None and "group_size" in table["method"] and variant != "g1":
        table["method"]["group_size"] = group  # G = 1 stays the variant itself
    top_k = sampling.top_k or settings.training_top_k(actor.llm.model_name("actor"))[0]
    return train_config(
        task,
        table,
        None,
        methods=BUILTIN_METHODS,
        training_top_k=lambda: top_k,
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
