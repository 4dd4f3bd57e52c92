"""Averages of an evaluation: overall, per category, answer-state shares; the terminal tables
(of one evaluation, and of two compared question by question)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from grse_graph.metrics.analysis import carries_citation, evidence_citation_rate

from .records import CategoryAverage, EvalSummary, GroupSummary, PredictionRecord
from .transitions import OUTCOMES, LibraryComparison, Outcome

STATE_KEYS: tuple[str, ...] = ("correct", "wrong", "declined", "failed")


def metric_names(records: Sequence[PredictionRecord]) -> list[str]:
    """Metric names reported by the successful records, in first-seen order."""
    return list(dict.fromkeys(name for record in records for name in record.metrics))


def hand_off(record: PredictionRecord) -> str | None:
    """The first agent's output of a finished record's execution (its hand-off to the next
    agent), or None when the record keeps no execution with two agents."""
    rollout = record.rollout
    if record.failed or rollout is None or len({s.agent for s in rollout.steps}) < 2:
        return None
    first = rollout.steps[0].agent
    return "\n".join(step.output for step in rollout.steps_of(first))


def evidence_rate(records: Sequence[PredictionRecord]) -> float | None:
    """`evidence_citation_rate` over the hand-offs of `records` (None without any)."""
    texts = [text for text in map(hand_off, records) if text is not None]
    return evidence_citation_rate(texts) if texts else None


def category_average(per_category: dict[str, GroupSummary]) -> CategoryAverage | None:
    """The Avg. over two or more categories: each metric over the categories that report it."""
    groups = [g for g in per_category.values() if g.count > 0]
    if len(groups) < 2:
        return None
    names = list(dict.fromkeys(n for g in groups for n in g.metrics))
    return CategoryAverage(
        categories=len(groups),
        reward=sum(g.reward for g in groups) / len(groups),
        metrics={
            n: sum(g.metrics[n] for g in groups if n in g.metrics)
            / sum(1 for g in groups if n in g.metrics)
            for n in names
        },
    )


def summarize_group(
    records: Sequence[PredictionRecord], names: Sequence[str], *, evidence: bool = False
) -> GroupSummary:
    """Means over `records` (with `evidence`, the evidence citation rate of their hand-offs).

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
    cited = sum(1 for r in records if not r.failed and carries_citation(r.prediction))
    states = {k: 0.0 for k in STATE_KEYS}
    for record in records:
        # A task without an F1 metric has no answer state; such records count in no share.
        key = "failed" if record.failed else record.state
        if key is not None:
            states[key] += 1.0 / count
    return GroupSummary(
        count=count,
        failed=failed,
        reward=reward,
        metrics=metrics,
        states=states,
        cited_answers=cited,
        evidence_citation_rate=evidence_rate(records) if evidence else None,
    )


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
    evidence: bool = False,
) -> EvalSummary:
    """The summary of the finished records of one run (categories in the task's report order,
    then any others sorted, and their Avg.); `evidence` (conversation tasks) adds the evidence
    citation rate of the first agent's hand-offs."""
    names = metric_names([r for r in records if not r.failed])
    seen = {r.category for r in records if r.category is not None}
    ordered = [c for c in categories if c in seen] + sorted(seen - set(categories))
    per_category = {
        c: summarize_group([r for r in records if r.category == c], names, evidence=evidence)
        for c in ordered
    }
    return EvalSummary(
        task=task,
        split=split,
        method=method,
        questions=questions,
        finished=len(records),
        failed=sum(1 for r in records if r.failed),
        overall=summarize_group(records, names, evidence=evidence),
        per_category=per_category,
        category_average=category_average(per_category),
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
    cited = summary.overall.cited_answers > 0
    if cited:
        table.add_column("cited answers", justify="right")
    evidence = summary.overall.evidence_citation_rate is not None
    if evidence:
        table.add_column("evidence cited", justify="right")

    def rate(value: float | None) -> str:
        return f"{100 * value:.0f}%" if value is not None else "-"

    def row(label: str, group: GroupSummary, style: str | None = None) -> None:
        table.add_row(
            label,
            str(group.count),
            str(group.failed),
            *(f"{100 * group.metrics[n]:.1f}" if n in group.metrics else "-" for n in names),
            *(f"{100 * group.states[s]:.0f}%" for s in STATE_KEYS[:3]),
            *([str(group.cited_answers)] if cited else []),
            *([rate(group.evidence_citation_rate)] if evidence else []),
            style=style,
        )

    for category, group in summary.per_category.items():
        row(category, group)
    average = summary.category_average
    if average is not None:
        table.add_row(
            "Avg.",
            "-",
            "-",
            *(f"{100 * average.metrics[n]:.1f}" if n in average.metrics else "-" for n in names),
            *(["-"] * (3 + cited + evidence)),
        )
    row("overall", summary.overall, style="bold")
    return table


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to at most `limit` characters (ending with an ellipsis)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def outcome_label(outcome: Outcome, reward: float) -> str:
    """`correct 1.00`: an answer's outcome and reward."""
    return f"{outcome} {reward:.2f}"


def difference_text(comparison: LibraryComparison) -> str:
    """Both mean rewards and the paired difference with its bootstrap interval, one line."""
    c, p = comparison, comparison.paired
    return (
        f"Mean reward: {c.before_label} {c.mean_before:.3f}, {c.after_label} {c.mean_after:.3f}; "
        f"paired difference {p.difference:+.3f}, {100 * p.level:.0f}% bootstrap interval "
        f"[{p.low:+.3f}, {p.high:+.3f}] ({p.questions} questions, {p.resamples:,} resamples, "
        f"seed {p.seed})."
    )


def transition_table(comparison: LibraryComparison) -> Table:
    """The 3x3 table: rows = outcome under the library before, columns = after."""
    c = comparison
    table = Table(title=f"test transitions {c.before_label} -> {c.after_label}")
    table.add_column(f"{c.before_label} \\ {c.after_label}")
    for outcome in OUTCOMES:
        table.add_column(outcome, justify="right")
    table.add_column("total", justify="right")
    for row in OUTCOMES:
        table.add_row(
            row,
            *(str(c.table.counts[row][col]) for col in OUTCOMES),
            str(c.table.total("before", row)),
        )
    table.add_row(
        "total",
        *(str(c.table.total("after", col)) for col in OUTCOMES),
        str(len(c.transitions)),
        style="bold",
    )
    return table


def question_table(comparison: LibraryComparison) -> Table:
    """One row per question: outcome, reward and (shortened) answer under each library."""
    c = comparison
    table = Table(title=f"test questions, {c.before_label} -> {c.after_label}")
    for column in ("question", "category", "gold", c.before_label, c.after_label, "change"):
        table.add_column(column, justify="right" if column == "change" else "left")

    def short(text: str) -> str:
        return shorten(text, 40)

    for t in c.transitions:
        moved = t.before != t.after
        table.add_row(
            t.question_id,
            t.category or "-",
            short(t.answer),
            f"{outcome_label(t.before, t.reward_before)}: {short(t.prediction_before)}",
            f"{outcome_label(t.after, t.reward_after)}: {short(t.prediction_after)}",
            f"{t.reward_change:+.2f}",
            style="bold" if moved else None,
        )
    return table
