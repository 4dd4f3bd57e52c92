"""The final report of a run: report.md with PNG plots, built from the run folder alone."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a display

import matplotlib.pyplot as plt

from grse_graph.methods.base import CreditMethod
from grse_graph.methods.registry import BUILTIN_METHODS, MethodClass, create_method
from grse_graph.skills import Skill

from .records import GateRecord
from .run_folder import RunFolder


def library_skills(directory: Path) -> list[Skill]:
    """The skills saved in one library folder, in name order (empty if the folder is absent)."""
    if not directory.exists():
        return []
    return [Skill.load(p.parent) for p in sorted(directory.glob("*/SKILL.md"))]


def libraries_by_iteration(run: RunFolder) -> dict[int, dict[str, list[Skill]]]:
    """iteration -> agent -> skills, for every saved libraries/iter_<t>."""
    found: dict[int, dict[str, list[Skill]]] = {}
    for t in run.library_iterations():
        root = run.path / "libraries" / f"iter_{t}"
        found[t] = {p.name: library_skills(p) for p in sorted(root.iterdir()) if p.is_dir()}
    return found


def _plot_validation(gates: list[GateRecord], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
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
    ax.set_title("Validation score per iteration (gate decisions)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_skill_counts(libs: dict[int, dict[str, list[Skill]]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
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
    ax.set_title("Skills per agent")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_utility(libs: dict[int, dict[str, list[Skill]]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
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
    ax.set_title("Utility of each skill over iterations")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(
    run: RunFolder,
    method: CreditMethod | None = None,
    methods: Mapping[str, MethodClass] = BUILTIN_METHODS,
) -> Path:
    """Write RUN/report.md and RUN/plots/*.png from the run folder's records.

    `method` writes its own section (default: the run's configured method, from `methods`).
    """
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    config = run.read_config()
    if method is None:
        method = create_method(config.method, methods)
    gates = run.gate.read()
    libs = libraries_by_iteration(run)
    records = run.credits(method.record_type).read()
    operators = run.operators.read()
    _plot_validation(gates, run.plots_dir / "validation.png")
    _plot_skill_counts(libs, run.plots_dir / "skills_per_agent.png")
    _plot_utility(libs, run.plots_dir / "skill_utility.png")

    out = [
        f"# {method.title} training report: {config.task}",
        "",
        f"Iterations {config.iterations}, batch {config.batch_size}, validation "
        f"{config.validation_size or 'all'} x H={config.validation_repeats}, delta "
        f"{config.delta}, library limit {config.library_limit}; {method.summary()}.",
        "",
        "## Validation and gate",
        "",
        "![validation](plots/validation.png)",
        "",
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
    out += ["", *method.report_lines(records)]
    out += ["", "## Operator actions", ""]
    out += ["| iteration | operator | agent | skills | changed | reason |"]
    out += ["| ---: | --- | --- | --- | --- | --- |"]
    for line in operators:
        op = line.record
        out.append(
            f"| {line.iteration} | {op.operator} | {op.agent} | {_cell(', '.join(op.skills))} | "
            f"{'yes' if op.changed else 'no'} | {_cell(op.reason)[:160]} |"
        )
    out += ["", "## Skills", "", "![skills](plots/skills_per_agent.png)", ""]
    out += ["![utility](plots/skill_utility.png)", ""]
    final_t = max(libs) if libs else None
    out += [f"### Final libraries (iteration {final_t})", ""]
    out += ["| agent | skill | description | utility | provenance |"]
    out += ["| --- | --- | --- | ---: | --- |"]
    for agent, skills in sorted((libs.get(final_t, {}) if final_t is not None else {}).items()):
        if not skills:
            out.append(f"| {agent} | (empty) | | | |")
        for s in skills:
            utility = f"{s.utility:.2f}" if s.utility is not None else "-"
            out.append(
                f"| {agent} | {s.name} | {_cell(s.description)} | {utility} | "
                f"{_cell(s.provenance or '-')} |"
            )
    out += ["", "## Tokens and time per role", "", *_usage_table(run.read_usage()), ""]
    run.report_path.write_text("\n".join(out), encoding="utf-8")
    return run.report_path
