"""report.md's probe section: each probed iteration's measured skill effects, as the skill
audit shows them (its table and its chart, `grse_graph.probes.report`), the charts written into
RUN/plots beside the report's other plots."""

from __future__ import annotations

from grse_graph.durable import atomic_write
from grse_graph.probes import ProbeSettings
from grse_graph.probes.report import (
    AuditReport,
    chart_link,
    effects_chart_png,
    effects_table,
    plan_line,
)

from .config import TrainConfig
from .run_folder import RunFolder


def chart_name(iteration: int) -> str:
    """The chart's file name inside RUN/plots for one iteration's probe."""
    return f"effects_iter_{iteration}.png"


def write_probe_charts(run: RunFolder, config: TrainConfig) -> list[str]:
    """Draw every probed iteration's effects chart into RUN/plots (the audit's drawing) and
    return report.md's probe section, which embeds them (nothing when no iteration was
    probed)."""
    probed = {record.iteration: record.result for record in run.probe_results.read()}
    if not probed:
        return []
    # ProbeResult does not keep its split; the run's settings name it (the default when probe
    # credit was switched off after the fact).
    split = (config.probe or ProbeSettings()).split
    lines = [
        "## Probe credit: measured effects",
        "",
        "Each skill's effect on reward, measured by running the team greedily with the "
        "iteration's libraries and with the skill masked: the mean paired difference over "
        "questions with its bootstrap interval (the skill audit's measurement).",
        "",
    ]
    for iteration, result in sorted(probed.items()):
        audit = AuditReport.from_result(result, task=config.task, split=split)
        name = chart_name(iteration)
        atomic_write(run.plots_dir / name, effects_chart_png(audit))
        full = "-" if result.full_reward is None else f"{result.full_reward:.3f}"
        lines += [
            f"### Iteration {iteration}",
            "",
            f"- plan: {plan_line(audit.header, len(audit.effects))}",
            f"- mean reward of the full libraries: {full}",
            "",
            *effects_table(audit),
            "",
            chart_link(audit, f"plots/{name}"),
            "",
        ]
    return lines
