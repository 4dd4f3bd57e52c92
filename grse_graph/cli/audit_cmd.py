"""`grse skills audit`: which skills of a library or pack help the team, and which hurt.

The team answers a split's questions greedily with the full libraries and with skills masked
(`grse_graph.probes`); each skill's effect is its paired reward difference with a bootstrap
interval. Every input is checked and the probe planned before an engine starts, so a wrong path,
an empty split or a budget too small costs nothing. Finished runs go to ``probes.jsonl`` in the
output folder, so running the same audit again resumes it; the report files come from
`grse_graph.probes.report`, shared with training and the benchmarks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from grse_graph.errors import ConfigError, TaskError
from grse_graph.evaluation.runner import failures_bar
from grse_graph.llm.config import load_config
from grse_graph.probes import ProbeRun, ProbeSettings, ProbeStore, SkillProber, plan_probes
from grse_graph.probes.design import ProbePlan
from grse_graph.probes.report import (
    AuditReport,
    cost_line,
    interval_text,
    plan_line,
    signed,
    write_audit,
)
from grse_graph.skills import shown
from grse_graph.tasks import Task, TaskQuestion
from grse_graph.team import TeamSpec

from .eval_cmd import USAGE_FILE, ModelOption, QuestionOptions, TeamOptions, actor_provider
from .option_groups import typer_command
from .options import ConfigOption, JsonOption, print_json, report_console
from .skills_cmd import one_line_errors

DEFAULT_SPLIT = "validation"
DEFAULT_LIMIT = 12
DEFAULT_BUDGET: int = ProbeSettings().budget
VERDICT_STYLES = {"helps": "green", "hurts": "red", "no effect": "dim"}

SplitOption = Annotated[
    str,
    typer.Option(
        "--split",
        metavar="S",
        help="train, validation or test (default validation: an audit should not spend the "
        "test split you report on).",
    ),
]
LimitOption = Annotated[
    int,
    typer.Option("--limit", metavar="N", min=0, help="Probe the first N questions of the split."),
]
BudgetOption = Annotated[
    int,
    typer.Option(
        "--budget",
        metavar="RUNS",
        min=2,
        help="At most this many team runs, full-library runs included (leave-one-out when it "
        "fits, else random masks, else leave-one-out on fewer questions).",
    ),
]
OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="DIR",
        help="Output folder (default audit-<task>-<split>); running again resumes from it.",
    ),
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option("--concurrency", min=1, help="Team runs at once (default: actor concurrency)."),
]


def audit_team(task: Task, team: TeamOptions) -> TeamSpec:
    """The task's team carrying the libraries to audit (one-line `GrseError`s for a bad path,
    a folder that is not a library or pack, or both or neither way of giving them)."""
    mode = team.checked_skill_mode()
    if team.pack is None and not team.library:
        raise ConfigError("nothing to audit: give --library AGENT=DIR (repeatable) or --pack PACK")
    return team.team(task, mode)


def audit_questions(task: Task, split: str, limit: int) -> list[TaskQuestion]:
    """The first `limit` questions of the split (a `TaskError` when none are left)."""
    questions = list(task.split(split))[:limit]
    if not questions:
        raise TaskError(f"no questions to audit: --limit {limit} of split '{split}'")
    return questions


@contextmanager
def run_progress(console: Console, plan: ProbePlan) -> Iterator[Progress]:
    """A bar with one unit per planned team run and the failed count (resumed runs count as
    done the moment they are found)."""
    with failures_bar(console) as bar:
        bar.add_task("audit runs", total=plan.runs, failed=0)
        yield bar


def progress_callback(bar: Progress) -> Callable[[ProbeRun, bool], None]:
    """`SkillProber.on_run` for `bar`: advance one unit per run, count the failed ones."""
    (task_id,) = bar.task_ids
    failed = 0

    def on_run(run: ProbeRun, resumed: bool) -> None:
        nonlocal failed
        failed += int(run.reward is None)
        bar.update(task_id, advance=1, failed=failed)

    return on_run


def audit_table(report: AuditReport) -> Table:
    """The per-skill table for the terminal (names from files are escaped, never markup)."""
    header = report.header
    table = Table(
        title=Text(f"skill audit {shown(header.task)}/{shown(header.split)}"),
        caption=Text(f"{plan_line(header, len(report.effects))}\n{cost_line(header)}"),
    )
    # The numbers never wrap and the headers are short, so on an 80-column log (no terminal)
    # only the names fold instead of the effect shrinking to an ellipsis.
    table.add_column("agent", overflow="fold")
    table.add_column("skill", overflow="fold")
    table.add_column("effect", justify="right", no_wrap=True)
    table.add_column(f"{header.confidence:.0%} interval", no_wrap=True)
    table.add_column("q", justify="right", no_wrap=True)
    table.add_column("used", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for r in report.effects:
        table.add_row(
            Text(shown(r.agent)),
            Text(shown(r.skill)),
            Text(signed(r.effect)),
            Text(interval_text(r)),
            Text(str(r.questions)),
            Text("-" if r.invocations is None else str(r.invocations)),
            Text(r.verdict, style=VERDICT_STYLES[r.verdict]),
        )
    return table


def audit_command(
    questions: QuestionOptions,
    team: TeamOptions,
    split: SplitOption = DEFAULT_SPLIT,
    limit: LimitOption = DEFAULT_LIMIT,
    budget: BudgetOption = DEFAULT_BUDGET,
    out: OutOption = None,
    config: ConfigOption = None,
    model: ModelOption = None,
    concurrency: ConcurrencyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Measure which skills help the team and which hurt, by running it with skills masked.

    Runs the team greedily on the split's questions with the full libraries and with skills
    masked, within --budget team runs, and reports each skill's effect (mean paired reward
    difference, with the skill minus without it) with a 95% interval and a verdict: helps,
    hurts or no effect; skill loads are counted in tool and path mode. Writes audit.json,
    report.md and effects.png into --out; running the same audit again resumes. --json prints
    only the per-skill list on stdout.
    """
    loaded = questions.load()
    spec = audit_team(loaded, team)
    probed = audit_questions(loaded, split, limit)
    settings = ProbeSettings(budget=budget, split=split)
    # The plan `SkillProber` will make, made before any engine starts: an empty library or a
    # budget too small is one line (`ProbeError`).
    plan = plan_probes(spec.libraries(), [q.id for q in probed], settings)
    llm = load_config(config, overrides={"engine.model": model})
    out_dir = out or Path(f"audit-{loaded.name}-{split}")
    console = report_console(as_json)
    with actor_provider(llm, console) as provider, run_progress(console, plan) as bar:
        prober = SkillProber(
            loaded,
            spec,
            provider,
            settings,
            store=ProbeStore(out_dir),
            concurrency=concurrency or provider.concurrency("actor"),
            on_run=progress_callback(bar),
        )
        result = asyncio.run(prober.run(probed))
        provider.ledger.write_json(out_dir / USAGE_FILE, accumulate=True)
    report = AuditReport.from_result(result, task=loaded.name, split=split)
    write_audit(report, out_dir)
    console.print(audit_table(report))
    console.print(Text(f"results in {out_dir}"))
    if as_json:
        print_json(report.records_json())


def register(app: typer.Typer) -> None:
    """Register `audit` (as `grse skills audit`, through the skills group)."""
    app.command("audit")(one_line_errors(typer_command(audit_command)))
