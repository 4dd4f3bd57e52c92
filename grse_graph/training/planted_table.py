"""The planted-skill table as text: one row per planted skill (its kind, the critic's first
credit u1, the probe's measured effect with its interval, which signal decided and its fate)
and the repair's summary line. `grse demo` prints it (`demo.print_planted`) and report.md
carries it (`report.write_report`), both from these cells, so the two never disagree."""

from __future__ import annotations

from collections.abc import Sequence

from .repair import PlantedSkillOutcome, separation

PLANTED_TITLE = "the planted skills: credit and fate"


def planted_columns(outcomes: Sequence[PlantedSkillOutcome]) -> list[str]:
    """The column headings; the effect's names the interval's level when every probed skill
    shares one."""
    levels = {o.probe_confidence for o in outcomes if o.probe_confidence is not None}
    interval = f"{levels.pop():.0%}" if len(levels) == 1 else "interval"
    return [
        "agent",
        "skill",
        "kind",
        "critic u1",
        f"probe effect [{interval}]",
        "decided by",
        "fate",
    ]


def u1_text(outcome: PlantedSkillOutcome) -> str:
    """The critic's first credit with whether its sign matches the kind (`silent`: none)."""
    if outcome.u1 is None:
        return "silent"
    sign = {True: " (sign right)", False: " (sign wrong)", None: ""}[outcome.sign_correct]
    return f"{outcome.u1:+.2f}{sign}"


def effect_text(outcome: PlantedSkillOutcome, probe: bool) -> str:
    """The measured effect with its interval and verdict; `-` without probe credit, `no pair`
    when the probe had no question with both kinds of run."""
    o = outcome
    if o.probe_effect is None or o.probe_low is None or o.probe_high is None:
        return "-" if not probe else "no pair"
    return f"{o.probe_effect:+.3f} [{o.probe_low:+.3f}, {o.probe_high:+.3f}] {o.probe_verdict}"


def planted_row(outcome: PlantedSkillOutcome, probe: bool) -> list[str]:
    """One skill's cells, in `planted_columns` order."""
    o = outcome
    fate = o.fate + (f" (iteration {o.fate_iteration})" if o.fate_iteration else "")
    return [o.agent, o.skill, o.kind, u1_text(o), effect_text(o, probe), o.decided_by or "-", fate]


def repair_summary(outcomes: Sequence[PlantedSkillOutcome]) -> str:
    """Repairs counted per kind, the critic's right signs and the helpful-harmful separation."""
    harmful = [o for o in outcomes if o.kind == "harmful"]
    helpful = [o for o in outcomes if o.kind == "helpful"]
    signs = [o.sign_correct for o in outcomes if o.sign_correct is not None]
    gap = separation(list(outcomes))
    # Counted per kind: a helpful skill that is simply kept is not a repair.
    return (
        f"harmful removed or rewritten {sum(o.repaired for o in harmful)} of {len(harmful)}; "
        f"helpful kept {sum(o.repaired for o in helpful)} of {len(helpful)}; "
        f"critic signs right {sum(signs)} of {len(outcomes)} "
        f"({len(outcomes) - len(signs)} without a credit); helpful-harmful u1 separation "
        + ("n/a" if gap is None else f"{gap:+.2f}")
    )


def md_cell(text: str) -> str:
    """`text` safe inside one cell of a markdown table row."""
    return text.replace("|", "\\|").replace("\n", " ")


def planted_lines(outcomes: Sequence[PlantedSkillOutcome], probe: bool) -> list[str]:
    """report.md's section on the planted skills: the table and the summary line (nothing
    when the run did not start from a planted library)."""
    if not outcomes:
        return []
    columns = planted_columns(outcomes)
    lines = [
        "## Planted skills: credit and fate",
        "",
        "The run started from a planted library; which skill helps and which harms was hidden "
        "from the critic and the optimizer. Critic u1 is the critic's credit in the first plan; "
        "the probe effect is the skill's measured effect on reward in the first iteration.",
        "",
        "| " + " | ".join(columns) + " |",
        "| " + " | ".join("---" for _ in columns) + " |",
    ]
    for outcome in outcomes:
        lines.append("| " + " | ".join(md_cell(c) for c in planted_row(outcome, probe)) + " |")
    return [*lines, "", repair_summary(outcomes), ""]
