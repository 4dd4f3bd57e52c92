"""SkillMAS's section of report.md: rounds, utility tables over rounds, the pool's promotions,
each restructuring decision with the team before and after, and the best round."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .state import RoundRecord, SkillmasState

if TYPE_CHECKING:
    from .restructure import Decision
    from .trace import SkillmasRecord
    from .work import EvolutionAction, PoolDecision

_ACTION_COLUMNS = (
    "| round | action | agent | skill | task type | detail |",
    "| ---: | --- | --- | --- | --- | --- |",
)
_POOL_COLUMNS = (
    "| round | agent | skill | uses | successes | decision |",
    "| ---: | --- | --- | ---: | ---: | --- |",
)
_RESTRUCTURING_COLUMNS = (
    "| round | decision | task type | agent | guard | team before | team after | evidence |",
    "| ---: | --- | --- | --- | --- | --- | --- | --- |",
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def round_score(state: SkillmasState, checkpoint: str) -> float | None:
    """The score that picks the checkpoint: train success, or the validation score."""
    if state.round is None:
        return None
    return state.round.success_rate if checkpoint == "train" else state.round.validation_score


def best_round(states: Sequence[SkillmasState], checkpoint: str = "train") -> SkillmasState | None:
    """The state whose round scored best (ties: the earlier round)."""
    best: tuple[float, SkillmasState] | None = None
    for state in states:
        score = round_score(state, checkpoint)
        if score is not None and (best is None or score > best[0]):
            best = (score, state)
    return best[1] if best else None


def report_lines(
    records: Sequence[SkillmasRecord], states: Sequence[SkillmasState], checkpoint: str = "train"
) -> list[str]:
    """The "## SkillMAS rounds" section; the best round by `checkpoint`."""
    rounds = [s for s in states if s.round is not None]
    round_records = [s.round for s in rounds if s.round is not None]
    return [
        "## SkillMAS rounds",
        "",
        *_trace_lines(records),
        *_round_table(round_records),
        *_best_round_lines(rounds, checkpoint),
        *_skill_utility_lines(rounds),
        *_executor_utility_lines(rounds),
        *_titled_table(
            "Skill actions",
            _ACTION_COLUMNS,
            [_action_row(r.iteration, a) for r in round_records for a in r.actions],
        ),
        *_titled_table(
            "Validation pool",
            _POOL_COLUMNS,
            [_pool_row(r.iteration, d) for r in round_records for d in r.pool],
        ),
        *_restructuring_lines(round_records),
    ]


def _titled_table(title: str, columns: tuple[str, str], rows: Sequence[str]) -> list[str]:
    return ["", f"### {title}", "", *columns, *rows]


def _trace_lines(records: Sequence[SkillmasRecord]) -> list[str]:
    judged = sum(r.judge_calls for r in records)
    signals = [s for r in records for s in r.signals]
    with_skills = sum(bool(s.selected) for s in signals)
    out = [
        f"{len(records)} traces; steps with selected skills {with_skills}, "
        f"explicit signal {sum(s.explicit for s in signals)}, judge calls {judged}, "
        f"judge failures {sum(s.judge_error is not None for s in signals)}."
    ]
    local: dict[str, list[bool]] = {}
    for record in records:
        for agent, ok in (record.trace.local if record.trace else {}).items():
            local.setdefault(agent, []).append(ok)
    if local:
        out.append(
            "Executor-local verified outcomes: "
            + ", ".join(f"{a} {sum(v)}/{len(v)}" for a, v in sorted(local.items()))
            + "."
        )
    return out


def _round_table(rounds: Sequence[RoundRecord]) -> list[str]:
    out = [
        "",
        "| round | episodes | train success | by task type | validation | retained | diagnosed "
        "| local | actions | drop |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in rounds:
        kinds: dict[str, int] = {}
        for a in r.actions:
            kinds[a.kind] = kinds.get(a.kind, 0) + 1
        label = f"{r.iteration}" + (" (measure)" if r.measurement else "")
        by_type = ", ".join(f"{k} {v:.2f}" for k, v in r.success_by_type.items())
        out.append(
            f"| {label} | {r.episodes} | {r.success_rate:.3f} | {by_type} | "
            f"{'-' if r.validation_score is None else f'{r.validation_score:.3f}'} | "
            f"{len(r.retained)} | "
            f"{len(r.diagnoses)} | {sum(d.locally_diagnosable for d in r.diagnoses)} | "
            f"{', '.join(f'{k} {v}' for k, v in sorted(kinds.items())) or '-'} | "
            f"{'-' if r.drop is None else f'{r.drop:.3f}'} |"
        )
    return out


def _best_round_lines(rounds: Sequence[SkillmasState], checkpoint: str) -> list[str]:
    """Which round scored best by `checkpoint`, and where its state is (none: no lines)."""
    best = best_round(rounds, checkpoint)
    if best is None or best.round is None:
        return []
    where = "the train subset" if checkpoint == "train" else "the validation split"
    return [
        "",
        f"Best round on {where}: {best.round.iteration} "
        f"(score {round_score(best, checkpoint):.3f}); the state it executed is "
        f"libraries/iter_{best.round.iteration - 1} with the team and pool of "
        f"method_state.jsonl iteration {best.round.iteration - 1}.",
    ]


def _skill_utility_lines(rounds: Sequence[SkillmasState]) -> list[str]:
    out = ["", "### Skill Utility over rounds (global q / n)", ""]
    ids = sorted({i for s in rounds for i in s.skills.skills})
    if not ids:
        return [*out, "No skill was used yet."]
    return [*out, *_over_rounds("skill", "---:", ids, rounds, _skill_utility)]


def _executor_utility_lines(rounds: Sequence[SkillmasState]) -> list[str]:
    out = ["", "### Executor Utility over rounds (global q; per task type)", ""]
    agents = sorted({a for s in rounds for a in s.executors.agents})
    if not agents:
        return out
    return [*out, *_over_rounds("agent", "---", agents, rounds, _executor_utility)]


def _over_rounds(
    kind: str,
    align: str,
    keys: Sequence[str],
    rounds: Sequence[SkillmasState],
    cell: Callable[[SkillmasState, str], str],
) -> list[str]:
    return [
        f"| {kind} | " + " | ".join(f"r{s.iteration}" for s in rounds) + " |",
        "| --- |" + f" {align} |" * len(rounds),
        *(f"| {_cell(k)} | " + " | ".join(cell(s, k) for s in rounds) + " |" for k in keys),
    ]


def _skill_utility(state: SkillmasState, skill_id: str) -> str:
    rec = state.skills.skills.get(skill_id)
    return f"{rec.overall.q:.3f} / {rec.overall.n}" if rec else "-"


def _executor_utility(state: SkillmasState, agent: str) -> str:
    arec = state.executors.agents.get(agent)
    if arec is None:
        return "-"
    tasks = ", ".join(f"{t} {e.q:.2f}/{e.n}" for t, e in sorted(arec.tasks.items()))
    return f"{arec.overall.q:.3f} ({tasks})"


def _action_row(iteration: int, action: EvolutionAction) -> str:
    return (
        f"| {iteration} | {action.kind} | {action.agent or '-'} | {action.skill or '-'} | "
        f"{action.task_type or '-'} | {_cell(action.detail)[:160]} |"
    )


def _pool_row(iteration: int, d: PoolDecision) -> str:
    return (
        f"| {iteration} | {d.agent} | {d.skill} | {d.uses} | {d.successes} | "
        f"{d.decision}: {_cell(d.reason)} |"
    )


def _restructuring_lines(rounds: Sequence[RoundRecord]) -> list[str]:
    """Each round's restructuring decision, after the edit it reverted (drop_policy=demote)."""
    rows: list[str] = []
    for r in rounds:
        if r.restructuring is None:
            continue
        if r.reverted is not None:
            rows.append(_reverted_row(r.iteration, r.reverted, r.drop))
        rows.append(_decision_row(r.iteration, r.restructuring))
    return _titled_table("Restructuring", _RESTRUCTURING_COLUMNS, rows)


def _reverted_row(iteration: int, u: Decision, drop: float | None) -> str:
    """The row of an edit a drop undid: its teams swapped (after -> before)."""
    return (
        f"| {iteration} | reverted (drop): {u.action} of {u.agent or '-'} | "
        f"{u.task_type or '-'} | {u.agent or '-'} | - | {' > '.join(u.team_after)} | "
        f"{' > '.join(u.team_before)} | drop {drop or 0:.3f} |"
    )


def _decision_row(iteration: int, d: Decision) -> str:
    """The row of one restructuring decision; a routed specialist shares its slot's place."""
    ev = d.evidence
    evidence = (
        f"{ev.failures} failures, {ev.successes} successes, overlap {ev.overlap:.2f}, "
        f"handoff {ev.handoff_failures}, reasons {', '.join(ev.reasons)}"
        if ev
        else "-"
    )
    after = list(d.team_after)
    if d.slot and d.agent in after:
        after = [f"{n} | {d.agent}" if n == d.slot else n for n in after if n != d.agent]
    return (
        f"| {iteration} | {d.action}: {_cell(d.reason)} | {d.task_type or '-'} | "
        f"{d.agent or '-'}{f' (removed {d.removed})' if d.removed else ''}"
        f"{f' (routed for {d.slot})' if d.slot else ''} | "
        f"{_cell(d.guard or '-')} | {_cell(' > '.join(d.team_before))} | "
        f"{_cell(' > '.join(after))} | "
        f"{_cell(evidence)} |"
    )
