"""Every way a table's runs differ from the paper's settings (Tables 7 and 8), as the lines
printed at the top of the table."""

from __future__ import annotations

from collections.abc import Sequence

from grse_graph.training.config import TrainConfig

from .context import Actor, TableContext
from .data import paper_test_size
from .manifest import RunSpec
from .settings import PaperSettings
from .specs import ROLES, critic_context, critic_instructions, paper_caps, role_caps


def _train_lines(settings: PaperSettings, spec: RunSpec, config: TrainConfig) -> list[str]:
    t8 = settings.table8
    where = f"{spec.task}{'/' + spec.category if spec.category else ''} {spec.method}"
    lines = []
    if config.iterations != t8.iterations:
        lines.append(f"{where}: {config.iterations} iteration(s) (paper T = {t8.iterations})")
    group = getattr(config.method, "group_size", None)
    if group is not None and group != t8.group_size and spec.variant != "g1":
        lines.append(f"{where}: G = {group} (paper G = {t8.group_size})")
    batch = settings.batch_size(spec.task, spec.category)
    if spec.task not in settings.table8.batch_size:
        lines.append(
            f"{where}: {_questions(config.batch_size)} per iteration (the paper has no "
            f"{spec.task} task)"
        )
    elif batch is None:
        lines.append(
            f"{where}: {_questions(config.batch_size)} per iteration (paper value not in the text)"
        )
    elif config.batch_size != batch:
        lines.append(f"{where}: {_questions(config.batch_size)} per iteration (paper {batch})")
    if config.validation_size is not None:
        lines.append(
            f"{where}: validation on {_questions(config.validation_size)} (paper: the whole "
            "validation split)"
        )
    if config.delta != t8.delta:
        lines.append(f"{where}: delta = {config.delta} (paper {t8.delta})")
    if config.probe is not None:
        probe = config.probe
        lines.append(
            f"{where}: probe credit on (the package's addition, not the paper's method): "
            f"{probe.design} over {_questions(probe.questions, probe.split)}, "
            f"{probe.confidence:.0%} intervals"
        )
    return lines


def _questions(count: int, kind: str = "") -> str:
    """`count` questions, singular for one ("1 test question", "4 questions")."""
    noun = f"{kind} question" if kind else "question"
    return f"{count} {noun}{'' if count == 1 else 's'}"


def deviations(ctx: TableContext, runs: Sequence[RunSpec], *, paper_runs: int = 3) -> list[str]:
    """The header lines: sizes and seeds, the mode, and each deviation from the paper
    (`paper_runs`: runs per setting in the paper's table, three seeds or its first run)."""
    settings = ctx.settings
    lines = [f"commit {ctx.commit}; seeds {', '.join(map(str, ctx.seeds))}"]
    if ctx.smoke:
        smoke = settings.smoke
        lines.append(
            f"SMOKE SIZE: {_questions(smoke.test_questions, 'test')}, {len(ctx.seeds)} seed(s), "
            f"embedded model {smoke.engine_model} unless --config points the roles elsewhere; "
            "the numbers check the pipeline, not the paper"
        )
    on_fixtures = sorted({spec.task for spec in runs} & set(ctx.task_options))
    if ctx.fixtures is not None and on_fixtures:
        lines.append(
            f"DATA: {ctx.fixtures}; tasks on fixtures: {', '.join(on_fixtures)}; "
            "the numbers check the pipeline, not the paper"
        )
    tasks = sorted({spec.task for spec in runs} & set(ctx.sources))
    lines += [ctx.sources[task].header() for task in tasks if task not in on_fixtures]
    lines.append(
        "paper's mode: the project's additions off (--additions turns them on)"
        if ctx.paper_mode
        else "project's additions on (--additions): not the paper's mode"
    )
    if len(ctx.seeds) != paper_runs:
        lines.append(f"{len(ctx.seeds)} seed(s) (paper: {paper_runs})")
    elif paper_runs == 1:
        lines.append("one run per setting (the first seed), as in the paper")
    modes = {
        f"mode of {spec.method} runs: " + TrainConfig.model_validate(spec.params["config"]).mode()
        for spec in runs
        if spec.kind == "train"
    }
    lines += sorted(modes) or ["mode: no training run in this table"]
    lines += protocol_lines(ctx, runs)
    seen_tests: set[tuple[str, str | None]] = set()
    for spec in runs:
        key = (spec.task, spec.category)
        if spec.kind in ("eval", "baseline", "train") and key not in seen_tests:
            seen_tests.add(key)
            paper_size = paper_test_size(settings, spec.task, spec.category)
            available = ctx.test_split_size(spec)
            limit = ctx.test_limit()
            tested = min(limit, available) if limit is not None and available else available
            if paper_size is not None and tested is not None and tested != paper_size:
                lines.append(
                    f"{spec.task}{'/' + spec.category if spec.category else ''}: "
                    f"{_questions(tested, 'test')} (paper {paper_size})"
                )
        if spec.kind == "train":
            lines.extend(
                _train_lines(settings, spec, TrainConfig.model_validate(spec.params["config"]))
            )
    return list(dict.fromkeys(lines))


def cap_lines(ctx: TableContext, actor: Actor) -> list[str]:
    """Each role whose cap is not Table 8's (embedded engine, smoke size), and each remote
    role whose TOML cap Table 8's replaces."""
    paper = paper_caps(ctx)
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
    """The header lines about the values of `settings.json` the runs depend on where they are
    not simply the paper's: each role's cap, an actor family without a paper top-k, the critic
    payload budget, the package's choices where the text gives no value, and the paper's own
    inconsistencies the runs touch (repeated lines are the caller's to drop)."""
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
