"""The header lines about the values of `settings.json` a table's runs depend on where they are
not simply the paper's: each role's cap, an actor family without a paper top-k, the critic
payload budget, the package's choices where the text gives no value, and the paper's own
inconsistencies the runs touch."""

from __future__ import annotations

from collections.abc import Sequence

from grse_graph.llm.config import RoleName
from grse_graph.training.config import TrainConfig

from .context import Actor, TableContext
from .manifest import RunSpec
from .specs import ROLES, critic_context, critic_instructions, role_caps


def _paper_caps(ctx: TableContext) -> dict[RoleName, int]:
    caps = ctx.settings.table8.caps
    return {
        "actor": caps["actor"],
        "critic": caps["critic"],
        "optimizer": max(caps["refine"], caps["induce"], caps["consolidate"]),
    }


def cap_lines(ctx: TableContext, actor: Actor) -> list[str]:
    """Each role whose cap is not Table 8's (embedded engine, smoke size), and each remote
    role whose TOML cap Table 8's replaces."""
    paper = _paper_caps(ctx)
    used = role_caps(ctx, actor)
    lines = []
    for role in ROLES:
        settings = actor.llm.role(role)
        if used[role] != paper[role]:
            why = "smoke size" if ctx.smoke else "embedded engine"
            lines.append(
                f"actor {actor.label}: {role} cap {used[role]} tokens ({why}; paper {paper[role]})"
            )
        elif settings.max_tokens != used[role]:
            lines.append(
                f"actor {actor.label}: {role} cap {used[role]} tokens, the paper's, in place of "
                f"its TOML's {settings.max_tokens} (change caps in a copy of settings.json, "
                "--paper-dir)"
            )
    return lines


def top_k_lines(ctx: TableContext, actor: Actor) -> list[str]:
    """The training top-k of an actor whose family the paper gives none for."""
    model = actor.llm.model_name("actor")
    top_k, family = ctx.settings.training_top_k(model)
    if family is not None:
        return []
    choice = ctx.settings.choices["training_sampling.top_k.other"]
    return [
        f"actor {actor.label}: {model} is of neither family the paper samples "
        f"({', '.join(ctx.settings.table8.training_sampling.top_k)}): training top-k {top_k}, "
        f"the package's choice ({choice.why})"
    ]


def payload_lines(ctx: TableContext, actor: Actor, configs: Sequence[TrainConfig]) -> list[str]:
    """The GRSE critic's payload budget of `actor`'s runs: its context, cap and instructions;
    on the embedded engine a deviation (the paper serves a long context)."""
    lines = []
    context = critic_context(ctx, actor)
    cap = role_caps(ctx, actor)["critic"]
    paper_context = ctx.settings.table8.context_length
    for config in configs:
        limits = getattr(config.method, "payload_limits", None)
        if config.method.name != "grse" or limits is None or limits.max_tokens is None:
            continue
        instructions = critic_instructions(actor, bool(getattr(config.method, "structured", True)))
        sums = f"{context:,} - cap {cap:,} - instructions {instructions:,}"
        critic = "GRSE" if getattr(config.method, "structured", True) else "GRSE w/o structure"
        if actor.llm.role("critic").embedded:
            lines.append(
                f"actor {actor.label}: {critic} critic payload budget {limits.max_tokens:,} tokens "
                f"= the embedded engine's context {sums} (paper: a {paper_context:,}-token "
                "context)"
            )
        else:
            lines.append(
                f"actor {actor.label}: {critic} critic payload budget {limits.max_tokens:,} tokens "
                f"= the paper's context {sums} (serve the critic with --max-model-len "
                f"{paper_context})"
            )
    return lines


def protocol_lines(ctx: TableContext, runs: Sequence[RunSpec]) -> list[str]:
    """The header lines of this module for a table's runs (repeated lines are the caller's
    to drop)."""
    settings = ctx.settings
    trains = [spec for spec in runs if spec.kind == "train"]
    lines: list[str] = []
    for actor in ctx.actors:
        lines += cap_lines(ctx, actor)
        mine = [
            TrainConfig.model_validate(spec.params["config"])
            for spec in trains
            if spec.actor == actor.label
        ]
        if any(config.training_sampling.top_k is not None for config in mine):
            lines += top_k_lines(ctx, actor)
        lines += payload_lines(ctx, actor, mine)
    for task in dict.fromkeys(spec.task for spec in trains):
        lines += [
            f"{key} = {choice.value}: not in the paper's text; the package's choice ({choice.why})"
            for key, choice in settings.choices_of(task)
        ]
    for spec in runs:
        lines += [
            f"the paper disagrees with itself on {item.what}: its text has {item.text}; the "
            f"tables use {item.ours}"
            for item in settings.inconsistencies(spec.task, spec.category)
        ]
    return list(dict.fromkeys(lines))
