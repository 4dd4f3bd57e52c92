"""What a skill audit writes: ``audit.json``, ``report.md`` and the ``effects.png`` chart.

Pure functions over an `AuditReport` (a header on the probe plus one `AuditRecord` per skill),
so `grse skills audit`, training and the benchmarks write and read the same files. The record
is its own model rather than `SkillEffect` itself: the fields a pack's engineer scripts against
(`grse skills audit --json`) stay exactly these even if the probe's model grows.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from pydantic import BaseModel, ConfigDict, Field

from grse_graph.skills.files import atomic_write

from .design import ProbeDesign
from .effects import EffectVerdict, SkillEffect
from .runner import ProbeResult

AUDIT_FILE = "audit.json"
REPORT_FILE = "report.md"
CHART_FILE = "effects.png"

VERDICT_COLOURS: dict[EffectVerdict, str] = {
    "helps": "tab:green",
    "hurts": "tab:red",
    "no effect": "tab:gray",
}
DESIGN_NAMES: dict[ProbeDesign, str] = {
    "leave_one_out": "leave-one-out",
    "random_masks": "random masks",
}


class AuditRecord(BaseModel):
    """One skill's measured effect, as `--json` prints it and ``audit.json`` stores it.

    `effect` is the mean paired reward difference (libraries with the skill minus libraries
    without it), `low`/`high` its bootstrap interval; all three are None when no question had
    both kinds of run (every such run failed). `invocations` counts the skill's loads in the
    full-library runs, None where skills are inline in the prompt (no load to count).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    skill: str
    effect: float | None
    low: float | None
    high: float | None
    questions: int
    invocations: int | None
    verdict: EffectVerdict

    @classmethod
    def of(cls, effect: SkillEffect) -> AuditRecord:
        """The record of a probe's `SkillEffect`."""
        return cls(**effect.model_dump(include=set(cls.model_fields)))


class AuditHeader(BaseModel):
    """What was probed and what it cost (`elapsed_s`: this invocation only; resumed runs were
    paid for earlier)."""

    model_config = ConfigDict(extra="forbid")

    task: str
    split: str
    questions: list[str] = Field(description="ids of the questions probed")
    questions_left_out: int = Field(
        default=0, description="questions offered but left out so leave-one-out fits the budget"
    )
    design: ProbeDesign
    budget: int
    runs: int
    runs_resumed: int
    runs_failed: int
    model_steps: int
    reused_steps: int
    full_reward: float | None = Field(description="mean reward of the full libraries")
    elapsed_s: float
    confidence: float = Field(default=0.95, description="the level of every interval")


class AuditReport(BaseModel):
    """A skill audit: the header and one record per probed skill, in the probe's order."""

    model_config = ConfigDict(extra="forbid")

    header: AuditHeader
    effects: list[AuditRecord]

    @classmethod
    def from_result(cls, result: ProbeResult, *, task: str, split: str) -> AuditReport:
        """The report of a finished probe (its intervals at the probe's own level)."""
        probed = result.model_dump(include=set(AuditHeader.model_fields))
        header = AuditHeader(**probed, task=task, split=split)
        return cls(header=header, effects=[AuditRecord.of(e) for e in result.effects])

    def records_json(self) -> list[dict[str, Any]]:
        """The records as plain JSON values (what `grse skills audit --json` prints)."""
        return [record.model_dump(mode="json") for record in self.effects]


# -- text ----------------------------------------------------------------------------------


def signed(value: float | None) -> str:
    """``+0.125`` / ``-0.125``, or ``-`` for a missing value."""
    return "-" if value is None else f"{value:+.3f}"


def interval_text(record: AuditRecord) -> str:
    """``[-0.083, +0.250]``, or ``-`` when the skill had no paired question."""
    if record.low is None or record.high is None:
        return "-"
    return f"[{signed(record.low)}, {signed(record.high)}]"


def plan_line(header: AuditHeader, skills: int) -> str:
    """The design, questions, skills and runs against the budget, in one line."""
    questions = f"{len(header.questions)} questions"
    if header.questions_left_out:
        questions += f" ({header.questions_left_out} more left out to fit the budget)"
    return (
        f"{DESIGN_NAMES[header.design]} on {questions}, {skills} skills: "
        f"{header.runs} team runs of a budget of {header.budget}"
    )


def cost_line(header: AuditHeader) -> str:
    """Runs made now, resumed and failed, the model calls replay saved (over every run of the
    probe, resumed ones included) and this invocation's time."""
    made = header.runs - header.runs_resumed
    return (
        f"{made} runs made, {header.runs_resumed} resumed, {header.runs_failed} failed; "
        f"over all runs {header.model_steps} agent turns called the model and "
        f"{header.reused_steps} reused the full-library run's; {header.elapsed_s:.1f} s this time"
    )


def _cell(text: str) -> str:
    # Agent and skill names cannot hold these, but a report must stay a table regardless.
    return text.replace("|", "\\|").replace("\n", " ")


def audit_markdown(report: AuditReport) -> str:
    """``report.md``: the plan and cost lines, a table per skill and the chart."""
    header = report.header
    level = f"{header.confidence:.0%}"
    full = "-" if header.full_reward is None else f"{header.full_reward:.3f}"
    lines = [
        f"# Skill audit: {_cell(header.task)} / {_cell(header.split)}",
        "",
        "Each skill's effect is measured by running the team greedily with the full libraries "
        "and with the skill masked: the mean paired reward difference (with the skill minus "
        f"without it) over questions, with a {level} bootstrap interval over questions. "
        f"A skill helps when the whole interval is above 0 and hurts when it is below.",
        "",
        f"- plan: {plan_line(header, len(report.effects))}",
        f"- cost: {cost_line(header)}",
        f"- mean reward of the full libraries: {full}",
        "",
        *effects_table(report),
        "",
        chart_link(report, CHART_FILE),
    ]
    return "\n".join(lines) + "\n"


def effects_table(report: AuditReport) -> list[str]:
    """The markdown table of the measured effects: one row per skill, in the probe's order."""
    level = f"{report.header.confidence:.0%}"
    lines = [
        f"| agent | skill | effect | {level} interval | questions | invocations | verdict |",
        "| --- | --- | ---: | --- | ---: | ---: | --- |",
    ]
    for r in report.effects:
        invocations = "-" if r.invocations is None else str(r.invocations)
        lines.append(
            f"| {_cell(r.agent)} | {_cell(r.skill)} | {signed(r.effect)} | {interval_text(r)} "
            f"| {r.questions} | {invocations} | {r.verdict} |"
        )
    return lines


def chart_link(report: AuditReport, chart: str) -> str:
    """The markdown image of the effects chart at the relative path `chart`."""
    return f"![skill effects with {report.header.confidence:.0%} intervals]({chart})"


# -- chart ---------------------------------------------------------------------------------


def effects_chart_png(report: AuditReport) -> bytes:
    """The effects chart as PNG bytes: one row per skill (first at the top), the effect with
    its interval as error bars, coloured by verdict, and a vertical line at 0.

    Drawn on a bare `Figure` with the Agg canvas, never pyplot: no display, no global figure
    state, safe beside a running event loop or in a worker thread.
    """
    records = report.effects
    rows = max(len(records), 1)
    figure = Figure(figsize=(7.0, 1.3 + 0.38 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ys = list(range(len(records)))[::-1]
    bars = [(y, _bar(r), r.verdict) for y, r in zip(ys, records, strict=True)]
    for verdict, colour in VERDICT_COLOURS.items():
        points = [(y, bar) for y, bar, v in bars if v == verdict and bar is not None]
        if not points:
            continue
        ax.errorbar(
            [bar[0] for _, bar in points],
            [y for y, _ in points],
            xerr=[[bar[1] for _, bar in points], [bar[2] for _, bar in points]],
            fmt="o",
            color=colour,
            ecolor=colour,
            capsize=3,
            label=verdict,
        )
    for y, r in zip(ys, records, strict=True):
        if r.effect is None:
            ax.text(0.0, y, "  no paired question", va="center", fontsize=8, color="tab:gray")
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(ys, [f"{r.agent}/{r.skill}" for r in records], fontsize=8)
    ax.set_ylim(-0.7, rows - 0.3)
    limit = _axis_limit(records)
    ax.set_xlim(-limit, limit)
    level = f"{report.header.confidence:.0%}"
    ax.set_xlabel(f"effect on reward (with the skill minus without it), {level} interval")
    ax.set_title(f"Skill effects: {report.header.task} / {report.header.split}", fontsize=10)
    if any(r.effect is not None for r in records):
        ax.legend(fontsize=8, loc="best")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def _bar(record: AuditRecord) -> tuple[float, float, float] | None:
    """(effect, distance down to low, distance up to high), or None without an effect."""
    if record.effect is None:
        return None
    low = record.effect if record.low is None else record.low
    high = record.effect if record.high is None else record.high
    return record.effect, max(record.effect - low, 0.0), max(high - record.effect, 0.0)


def _axis_limit(records: list[AuditRecord]) -> float:
    # Symmetric around 0 so the side a skill falls on reads at a glance; rewards are in [0, 1],
    # so a difference never exceeds 1.
    extent = max(
        (abs(v) for r in records for v in (r.effect, r.low, r.high) if v is not None),
        default=0.0,
    )
    return min(1.05, max(0.1, math.ceil(extent * 20) / 20 + 0.05))


# -- files ---------------------------------------------------------------------------------


def write_audit(report: AuditReport, folder: Path) -> dict[str, Path]:
    """Write ``audit.json``, ``effects.png`` and ``report.md`` into `folder` (each replaced
    atomically, so an interrupted write leaves the previous file); returns them by name."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / name for name in (AUDIT_FILE, CHART_FILE, REPORT_FILE)}
    atomic_write(paths[AUDIT_FILE], (report.model_dump_json(indent=2) + "\n").encode("utf-8"))
    atomic_write(paths[CHART_FILE], effects_chart_png(report))
    atomic_write(paths[REPORT_FILE], audit_markdown(report).encode("utf-8"))
    return paths
