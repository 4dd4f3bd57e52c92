"""Every way a table's runs differ from the paper's settings (Tables 7 and 8), as the lines
printed at the top of the table."""

from __future__ import annotations

from collections.abc import Sequence

from grse_graph.llm.config import RoleName
from grse_graph.tasks.registry import load_task
from grse_graph.training.config import TrainConfig

from .context import TableContext
from .manifest import RunSpec
from .settings import PaperSettings

ROLE_CAPS: dict[RoleName, str] = {"actor": "actor", "critic": "critic", "optimizer": "induce"}


def _paper_test_size(settings: PaperSettings, task: str, category: str | None) -> int | None:
    if task == "hotpotqa":
        return settings.table7.hotpotqa.test
    if task == "locomo" and category is not None:
        return settings.table7.locomo.test.get(category)
    if task == "locomo":
        sizes = settings.table7.locomo.test.values()
        return None if None in sizes else sum(s or 0 for s in sizes)
    return None


def _split_size(ctx: TableContext, spec: RunSpec) -> int | None:
    try:
        options = ctx.task_options.get(spec.task, {})
        task = load_task(spec.task, ctx.data.get(spec.task), category=spec.category, **options)
        return len(task.split("test"))
    except Exception:  # a missing data file is the run's failure, not the header's
        return None


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


def deviations(ctx: TableContext, runs: Sequence[RunSpec]) -> list[str]:
    """The header lines: sizes and seeds, the mode, and each deviation from the paper."""
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
    if len(ctx.seeds) != 3:
        lines.append(f"{len(ctx.seeds)} seed(s) (paper: 3)")
    modes = {
        f"mode of {spec.method} runs: " + TrainConfig.model_validate(spec.params["config"]).mode()
        for spec in runs
        if spec.kind == "train"
    }
    lines += sorted(modes) or ["mode: no training run in this table"]
    for actor in ctx.actors:
        for role, paper_key in ROLE_CAPS.items():
            cap = actor.llm.role(role).max_tokens
            paper = settings.table8.caps[paper_key]
            if cap != paper:
                lines.append(f"actor {actor.label}: {role} cap {cap} tokens (paper {paper})")
    seen_tests: set[tuple[str, str | None]] = set()
    for spec in runs:
        key = (spec.task, spec.category)
        if spec.kind in ("eval", "baseline", "train") and key not in seen_tests:
            seen_tests.add(key)
            paper_size = _paper_test_size(settings, spec.task, spec.category)
            available = _split_size(ctx, spec)
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
