"""The final report of a run: report.md with PNG plots, built from the run folder alone."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a display

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from pydantic import BaseModel

from grse_graph.durable import atomic_write
from grse_graph.evaluation.summary import difference_text, outcome_label, shorten
from grse_graph.evaluation.transitions import OUTCOMES, LibraryComparison
from grse_graph.methods.base import CreditMethod, ReportInputs
from grse_graph.methods.registry import BUILTIN_METHODS, MethodClass, create_method
from grse_graph.probes import ProbeSettings
from grse_graph.probes.report import (
    AuditReport,
    chart_link,
    effects_chart_png,
    effects_table,
    plan_line,
)
from grse_graph.skills import Skill

from .actor_tokens import actor_token_lines, actor_tokens
from .config import TrainConfig
from .planted_table import md_cell, planted_lines
from .provenance import (
    GateEvidence,
    LearnedSkill,
    SkillChange,
    SourceQuestion,
    learned_skills,
    libraries_by_iteration,
)
from .records import GateRecord
from .repair import PlantedSkillOutcome
from .run_folder import RunFolder

VALIDATION_TITLE = "Validation score per iteration (gate decisions)"


@contextmanager
def _plot(path: Path, title: str) -> Iterator[Axes]:
    """One report plot: drawn on the yielded axes, then titled and saved to `path` as a PNG."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    try:
        yield ax
        ax.set_title(title)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)


def _plot_validation(gates: list[GateRecord], ax: Axes) -> None:
    xs = [g.iteration for g in gates]
    ax.plot(xs, [g.base_score for g in gates], marker="o", label="base b_t")
    for gate in gates:
        for d in gate.decisions:
            marker, color = ("^", "tab:green") if d.accepted else ("x", "tab:red")
            ax.scatter([gate.iteration], [d.candidate_score], marker=marker, color=color)
            ax.annotate(d.agent, (gate.iteration, d.candidate_score), fontsize=7)
    ax.scatter([], [], marker="^", color="tab:green", label="candidate accepted")
    ax.scatter([], [], marker="x", color="tab:red", label="candidate rejected")
    ax.set_xlabel("iteration")
    ax.set_ylabel("validation score")
    ax.set_xticks(xs)
    ax.legend(fontsize=7)


def _plot_skill_counts(libs: dict[int, dict[str, list[Skill]]], ax: Axes) -> None:
    iterations = sorted(libs)
    agents = sorted({a for per in libs.values() for a in per})
    for agent in agents:
        ax.plot(
            iterations, [len(libs[t].get(agent, [])) for t in iterations], marker="o", label=agent
        )
    ax.set_xlabel("iteration (0 = start)")
    ax.set_ylabel("skills")
    ax.set_xticks(iterations)
    ax.legend(fontsize=7)


def _plot_utility(libs: dict[int, dict[str, list[Skill]]], ax: Axes) -> None:
    series: dict[str, list[tuple[int, float]]] = {}
    for t in sorted(libs):
        for agent, skills in libs[t].items():
            for skill in skills:
                if skill.utility is not None:
                    series.setdefault(f"{agent}/{skill.name}", []).append((t, skill.utility))
    for label, points in sorted(series.items()):
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    if not series:
        ax.text(0.5, 0.5, "no skill has a recorded utility", ha="center", transform=ax.transAxes)
    ax.set_xlabel("iteration")
    ax.set_ylabel("utility")
    ax.set_ylim(-1.05, 1.05)
    if series:
        ax.legend(fontsize=6)


def _usage_table(usage: dict[str, Any]) -> list[str]:
    roles = usage.get("roles", {})
    if not roles:
        return ["No usage recorded."]
    lines = [
        "| role | calls | failures | prompt tokens | cached prompt tokens | completion tokens "
        "| model time (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    rows = [*sorted(roles.items()), ("total", usage.get("total", {}))]
    for name, r in rows:
        lines.append(
            f"| {name} | {r.get('calls', 0)} | {r.get('failures', 0)} | "
            f"{r.get('prompt_tokens', 0)} | {r.get('cached_prompt_tokens', 0)} | "
            f"{r.get('completion_tokens', 0)} | {r.get('wall_time_s', 0.0):.1f} |"
        )
    engine = usage.get("engine")
    if engine:
        lines.append("")
        lines.append(
            f"Engine: {engine.get('evaluated_prompt_tokens', 0)} prompt tokens computed, "
            f"{engine.get('reused_prompt_tokens', 0)} served from the prefix cache, "
            f"{engine.get('generated_tokens', 0)} generated."
        )
    return lines


def gate_text(gate: GateEvidence | None) -> str:
    """The gate's numbers for one change: validation before and after, the paired difference
    with its standard error next to the tolerance, and the verdict."""
    if gate is None:
        return "gate: no decision recorded for this agent"
    d = gate.decision
    if d.difference is not None and d.standard_error is not None:
        paired = f"difference {d.difference:+.3f} (s.e. {d.standard_error:.3f})"
    else:
        paired = f"difference {d.candidate_score - d.base_score:+.3f} (s.e. not recorded)"
    verdict = "accepted" if d.accepted else "rejected"
    return (
        f"gate: validation {d.base_score:.3f} -> {d.candidate_score:.3f}, {paired}, tolerance "
        f"{d.delta:.3f} (|V| = {gate.validation_questions} x H = {gate.validation_repeats}): "
        f"{verdict}"
    )


def change_text(change: SkillChange) -> str:
    """One line: which iteration and operator made the change, and its reason."""
    what = change.operator or "changed"
    line = f"iteration {change.iteration}, {what}: {change.reason}"
    if change.merged_from:
        line += f" (merged from {', '.join(change.merged_from)})"
    return line


def question_lines(question: SourceQuestion) -> list[str]:
    """A source question: its text and gold answer, the training rewards, then one line per
    diagnosis and per feedback item of it that the change used."""
    head = question.question_id
    if question.question is not None:
        head += f": {shorten(question.question, 160)!r}"
    if question.gold_answer is not None:
        head += f" (gold {shorten(question.gold_answer, 60)!r})"
    if question.rewards:
        head += "; training rewards " + ", ".join(f"{r:.2f}" for r in question.rewards)
    lines = [head]
    for cited in question.diagnoses:
        d = cited.diagnosis
        versus = ", ".join(d.successful_refs) or "no successful rollout"
        tag = " (hypothesis)" if cited.is_hypothesis else ""
        lines.append(
            f"  {d.failure_type} of {d.agent}, action {d.action}: failed "
            f"{', '.join(d.failed_refs) or '-'} vs {versus}. {d.explanation} "
            f"Correction{tag}: {d.correction}"
        )
    lines += [f"  feedback: {item}" for item in question.feedback]
    return lines


def learned_lines(learned: list[LearnedSkill]) -> list[str]:
    """The report's "What was learned" section: every skill of the final libraries with the
    changes that made it (gate numbers, source questions, diagnoses) and its body."""
    out = ["## What was learned", ""]
    if not learned:
        return [*out, "No skill in the final libraries: training accepted none.", ""]
    for skill in learned:
        utility = f", utility {skill.utility:.2f}" if skill.utility is not None else ""
        out += [f"### {skill.agent} / {skill.name}", "", f"{skill.description}{utility}", ""]
        if skill.from_start:
            out += ["From the starting library, unchanged by training.", ""]
        for change in skill.changes:
            out.append(f"- {change_text(change)}")
            out.append(f"  - {gate_text(change.gate)}")
            if change.direction:
                out.append(f"  - direction: {change.direction}")
            out += [f"  - feedback: {item}" for item in change.feedback]
            for question in change.questions:
                first, *rest = question_lines(question)
                out.append(f"  - question {first}")
                out += [f"    - {line.strip()}" for line in rest]
        out += ["", "~~~~markdown", skill.body.strip(), "~~~~", ""]
    return out


def comparison_lines(comparison: LibraryComparison) -> list[str]:
    """The report's test section: both means, the paired difference with its bootstrap
    interval, the 3x3 transition table and one row per question."""
    c = comparison
    before, after = c.before_label, c.after_label
    out = [
        f"## Test: {before} vs {after} libraries",
        "",
        f"{len(c.transitions)} test questions, greedy decoding; {c.correct_rule}.",
        "",
        difference_text(c),
        "",
        f"| {before} \\ {after} | " + " | ".join(OUTCOMES) + " | total |",
        "| --- |" + " ---: |" * (len(OUTCOMES) + 1),
    ]
    for row in OUTCOMES:
        cells = [str(c.table.counts[row][col]) for col in OUTCOMES]
        out.append(f"| {row} | " + " | ".join(cells) + f" | {c.table.total('before', row)} |")
    totals = [str(c.table.total("after", col)) for col in OUTCOMES]
    out += ["| total | " + " | ".join(totals) + f" | {len(c.transitions)} |", ""]
    out += [f"Became correct: {c.table.fixed}; stopped being correct: {c.table.broken}.", ""]
    out += [
        f"| question | category | gold | {before} | {after} | reward change |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    for t in c.transitions:
        answers = [
            f"{outcome_label(outcome, reward)}: {md_cell(shorten(prediction, 60))}"
            for outcome, reward, prediction in (
                (t.before, t.reward_before, t.prediction_before),
                (t.after, t.reward_after, t.prediction_after),
            )
        ]
        out.append(
            f"| {md_cell(t.question_id)} | {md_cell(t.category or '-')} | "
            f"{md_cell(shorten(t.answer, 40))} | {answers[0]} | {answers[1]} | "
            f"{t.reward_change:+.2f} |"
        )
    return [*out, ""]


def method_states(run: RunFolder, method: CreditMethod) -> list[BaseModel]:
    """The run's method states in round order, as the method's `state_type` (none for a
    stateless method)."""
    state_type = method.state_type
    if state_type is None:
        return []
    return [state_type.model_validate(r.state) for r in run.method_states.read()]


def gate_lines(gates: Sequence[GateRecord]) -> list[str]:
    """The gate table: per iteration its base score and each agent's candidate decision."""
    out = [
        "| iteration | base b_t | agent | candidate s_i | s_i - b_t (± s.e.) | decision |",
        "| ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for gate in gates:
        if not gate.decisions:
            out.append(f"| {gate.iteration} | {gate.base_score:.3f} | - | - | - | no candidate |")
        for d in gate.decisions:
            verdict = "accepted" if d.accepted else "rejected"
            paired = (
                f"{d.difference:+.3f} ± {d.standard_error:.3f}"
                if d.difference is not None and d.standard_error is not None
                else "-"
            )
            out.append(
                f"| {gate.iteration} | {d.base_score:.3f} | {d.agent} | "
                f"{d.candidate_score:.3f} | {paired} | {verdict} |"
            )
    return out


def final_library_lines(libs: dict[int, dict[str, list[Skill]]]) -> list[str]:
    """The last saved libraries: one row per skill with its utility and provenance."""
    final_t = max(libs) if libs else None
    out = [f"### Final libraries (iteration {final_t})", ""]
    out += ["| agent | skill | description | utility | provenance |"]
    out += ["| --- | --- | --- | ---: | --- |"]
    for agent, skills in sorted((libs.get(final_t, {}) if final_t is not None else {}).items()):
        if not skills:
            out.append(f"| {agent} | (empty) | | | |")
        for s in skills:
            utility = f"{s.utility:.2f}" if s.utility is not None else "-"
            out.append(
                f"| {agent} | {s.name} | {md_cell(s.description)} | {utility} | "
                f"{md_cell(s.provenance or '-')} |"
            )
    return out


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
        name = f"effects_iter_{iteration}.png"
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


def write_report(
    run: RunFolder,
    method: CreditMethod | None = None,
    methods: Mapping[str, MethodClass] = BUILTIN_METHODS,
    comparison: LibraryComparison | None = None,
    planted: Sequence[PlantedSkillOutcome] = (),
) -> Path:
    """Write RUN/report.md and RUN/plots/*.png from the run folder's records.

    `method` writes its own section (default: the run's configured method, from `methods`).
    `comparison` (the test of the starting against the trained libraries, as `grse demo` and
    `benchmarks/learning.py` run it) adds its transitions section; `planted` (each planted
    skill's credit and fate, `repair.planted_outcomes`, when the run started from a planted
    library) the planted-skill table. A run with probe credit gets each probed iteration's
    effects chart (RUN/plots/effects_iter_<t>.png).
    """
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    config = run.read_config()
    if method is None:
        method = create_method(config.method, methods)
    gates = run.gate.read()
    libs = libraries_by_iteration(run)
    records = run.credits(method.record_type).read()
    operators = run.operators.read()
    with _plot(run.plots_dir / "validation.png", VALIDATION_TITLE) as ax:
        _plot_validation(gates, ax)
    with _plot(run.plots_dir / "skills_per_agent.png", "Skills per agent") as ax:
        _plot_skill_counts(libs, ax)
    with _plot(run.plots_dir / "skill_utility.png", "Utility of each skill over iterations") as ax:
        _plot_utility(libs, ax)

    out = [
        f"# {method.title} training report: {config.task}",
        "",
        f"Iterations {config.iterations}, batch {config.batch_size}, validation "
        f"{config.validation_size or 'all'} x H={config.validation_repeats}, delta "
        f"{config.delta}, library limit {config.library_limit}; {method.summary()}.",
        "",
        f"Mode: {config.mode()}.",
        "",
        "## Validation and gate",
        "",
        "![validation](plots/validation.png)",
        "",
        *gate_lines(gates),
        "",
    ]
    out += planted_lines(planted, probe=config.probe is not None)
    out += write_probe_charts(run, config)
    out += learned_lines(learned_skills(run, method))
    if comparison is not None:
        out += comparison_lines(comparison)
    out += ["", *method.report_lines(ReportInputs(records, method_states(run, method)))]
    out += ["", "## Operator actions", ""]
    out += ["| iteration | operator | agent | skills | changed | reason |"]
    out += ["| ---: | --- | --- | --- | --- | --- |"]
    for line in operators:
        op = line.record
        out.append(
            f"| {line.iteration} | {op.operator} | {op.agent} | {md_cell(', '.join(op.skills))} | "
            f"{'yes' if op.changed else 'no'} | {md_cell(op.reason)[:160]} |"
        )
    out += ["", "## Skills", "", "![skills](plots/skills_per_agent.png)", ""]
    out += ["![utility](plots/skill_utility.png)", ""]
    out += final_library_lines(libs)
    out += ["", "## Tokens and time per role", "", *_usage_table(run.read_usage()), ""]
    out += ["### Actor tokens by stage", "", *actor_token_lines(actor_tokens(run)), ""]
    run.report_path.write_text("\n".join(out), encoding="utf-8")
    return run.report_path
