"""Every way a table's runs differ from the paper's settings (Tables 7 and 8), as the lines
printed at the top of the table."""

from __future__ import annotations

from collections.abc import Sequence

from grse_graph.training.config import TrainConfig

from .context import TableContext
from .data import paper_test_size
from .manifest import RunSpec
from .protocol_lines import protocol_lines
from .settings import PaperSettings


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
