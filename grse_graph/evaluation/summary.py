"""Averages of an evaluation: overall, per category, answer-state shares; the terminal table."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from .records import EvalSummary, GroupSummary, PredictionRecord

STATE_KEYS: tuple[str, ...] = ("correct", "wrong", "declined", "failed")


def metric_names(records: Sequence[PredictionRecord]) -> list[str]:
    """Metric names reported by the successful records, in first-seen order."""
    names: list[str] = []
    for record in records:
        for name in record.metrics:
            if name not in names:
                names.append(name)
    return names


def summarize_group(records: Sequence[PredictionRecord], names: Sequence[str]) -> GroupSummary:
    """Means over `records`.

    A metric is averaged over the successful records that report it plus every failed record
    (which counts 0); a metric no successful record of the group reports is left out. Mixed
    tasks report different metrics per category (EM for passages, BLEU for conversations), so a
    record without a metric does not pull that metric's mean down.
    """
    count = len(records)
    failed = sum(1 for r in records if r.failed)
    if count == 0:
        return GroupSummary(
            count=0,
            failed=0,
            reward=0.0,
            metrics={},
            states={k: 0.0 for k in STATE_KEYS},
        )
    metrics: dict[str, float] = {}
    for name in names:
        reporting = [r.metrics[name] for r in records if not r.failed and name in r.metrics]
        if reporting:
            metrics[name] = sum(reporting) / (len(reporting) + failed)
    reward = sum(0.0 if r.failed else r.reward for r in records) / count
    states = {k: 0.0 for k in STATE_KEYS}
    for record in records:
        # A task without an F1 metric has no answer state; such records count in no share.
        key = "failed" if record.failed else record.state
        if key is not None:
            states[key] += 1.0 / count
    return GroupSummary(count=count, failed=failed, reward=reward, metrics=metrics, states=states)


def summarize(
    records: Sequence[PredictionRecord],
    *,
    task: str,
    split: str,
    method: str,
    questions: int,
    categories: Sequence[str] = (),
    elapsed_s: float = 0.0,
    out_dir: str = "",
) -> EvalSummary:
    """The summary of the finished records of one run (categories in the task's report order,
    then any others sorted)."""
    names = metric_names([r for r in records if not r.failed])
    seen = {r.category for r in records if r.category is not None}
    ordered = [c for c in categories if c in seen] + sorted(seen - set(categories))
    per_category = {
        c: summarize_group([r for r in records if r.category == c], names) for c in ordered
    }
    return EvalSummary(
        task=task,
        split=split,
        method=method,
        questions=questions,
        finished=len(records),
        failed=sum(1 for r in records if r.failed),
        overall=summarize_group(records, names),
        per_category=per_category,
        elapsed_s=elapsed_s,
        out_dir=out_dir,
    )


def summary_table(summary: EvalSummary) -> Table:
    """A rich table: one row per category and one overall row; metrics and states in percent."""
    names = list(summary.overall.metrics)
    table = Table(
        title=f"{summary.task} / {summary.split} / {summary.method}: "
        f"{summary.finished} of {summary.questions} questions, {summary.failed} failed"
    )
    table.add_column("category")
    table.add_column("n", justify="right")
    table.add_column("failed", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    for state in STATE_KEYS[:3]:
        table.add_column(state, justify="right")

    def row(label: str, group: GroupSummary, style: str | None = None) -> None:
        table.add_row(
            label,
            str(group.count),
            str(group.failed),
            *(f"{100 * group.metrics[n]:.1f}" if n in group.metrics else "-" for n in names),
            *(f"{100 * group.states[s]:.0f}%" for s in STATE_KEYS[:3]),
            style=style,
        )

    for category, group in summary.per_category.items():
        row(category, group)
    row("overall", summary.overall, style="bold")
    return table
