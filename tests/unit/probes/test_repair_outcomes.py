"""`planted_outcomes` and `separation` over a hand-written run folder: each planted skill's first
credit, measured effect and fate (no model, no engine)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from grse_graph.methods.gate import GateDecision
from grse_graph.methods.operators.schema import OperatorName, OperatorRecord
from grse_graph.methods.plan import (
    AggregationResult,
    DirectionVerdict,
    EditDirection,
    ProbeEvidence,
)
from grse_graph.probes import ProbeResult, SkillEffect
from grse_graph.tasks.planted import PlantedKind, PlantedLibrary, PlantedSkill
from grse_graph.training.demo import print_planted
from grse_graph.training.planted_table import planted_lines, planted_row, repair_summary
from grse_graph.training.records import AggregateRecord, GateRecord, OperatorLine, ProbeRecord
from grse_graph.training.repair import PlantedSkillOutcome, planted_outcomes, separation
from grse_graph.training.run_folder import RunFolder

AGENT = "reasoner"


def planted(*skills: tuple[str, PlantedKind]) -> PlantedLibrary:
    entries = [
        PlantedSkill(agent=AGENT, skill=name, kind=kind, note=f"{name} is {kind}")
        for name, kind in skills
    ]
    return PlantedLibrary(task="demo", pack="planted", skills=entries)


def direction(skill: str, utility: float, verdict: DirectionVerdict) -> EditDirection:
    return EditDirection(agent=AGENT, skill_id=skill, summary="s", utility=utility, verdict=verdict)


def operator(
    iteration: int, name: OperatorName, skills: Sequence[str], removed: Sequence[str] = ()
) -> OperatorLine:
    record = OperatorRecord(
        operator=name,
        agent=AGENT,
        iteration=iteration,
        skills=list(skills),
        removed=list(removed),
        before_hash="before",
        after_hash="after",
        changed=True,
        reason="test",
    )
    return OperatorLine(iteration=iteration, record=record)


def gate(iteration: int, accepted: bool, skills_after: Sequence[str]) -> GateRecord:
    decision = GateDecision(
        agent=AGENT, base_score=0.5, candidate_score=0.6, delta=0.05, accepted=accepted
    )
    return GateRecord(
        iteration=iteration,
        base_score=0.5,
        validation_questions=4,
        validation_repeats=1,
        decisions=[decision],
        libraries_before={},
        libraries_after={},
        skills_after={AGENT: list(skills_after)},
        library_paths={},
    )


def folder(
    path: Path,
    *,
    directions: Sequence[EditDirection] = (),
    evidence: Sequence[ProbeEvidence] = (),
    operators: Sequence[OperatorLine] = (),
    gates: Sequence[GateRecord] = (),
    effects: Sequence[SkillEffect] | None = None,
) -> RunFolder:
    run = RunFolder(path)
    plan = AggregationResult(directions=list(directions), probe_evidence=list(evidence))
    run.aggregates.append(AggregateRecord(iteration=1, result=plan))
    if effects is not None:
        result = ProbeResult(
            design="leave_one_out",
            questions=["q0", "q1"],
            budget=20,
            runs=6,
            runs_resumed=0,
            full_reward=0.5,
            effects=list(effects),
            confidence=0.8,
        )
        run.probe_results.append(ProbeRecord(iteration=1, result=result))
    for line in operators:
        run.operators.append(line)
    for record in gates:
        run.gate.append(record)
    return run


def outcome(run: RunFolder, library: PlantedLibrary, skill: str) -> PlantedSkillOutcome:
    return next(o for o in planted_outcomes(run, library) if o.skill == skill)


LIBRARY = planted(("good", "helpful"), ("bad", "harmful"))


def test_pruned_when_the_gate_accepted_the_agents_candidate_without_the_skill(
    tmp_path: Path,
) -> None:
    run = folder(
        tmp_path,
        operators=[operator(1, "prune", ["bad"], removed=["bad"])],
        gates=[gate(1, accepted=True, skills_after=["good"])],
    )
    bad = outcome(run, LIBRARY, "bad")
    assert (bad.fate, bad.fate_iteration) == ("pruned", 1)
    good = outcome(run, LIBRARY, "good")
    assert (good.fate, good.fate_iteration) == ("kept", None)


def test_kept_when_the_gate_rejected_the_candidate(tmp_path: Path) -> None:
    run = folder(
        tmp_path,
        operators=[
            operator(1, "prune", ["bad"], removed=["bad"]),
            operator(1, "refine", ["good"]),
        ],
        gates=[gate(1, accepted=False, skills_after=["bad", "good"])],
    )
    assert [(o.skill, o.fate, o.fate_iteration) for o in planted_outcomes(run, LIBRARY)] == [
        ("good", "kept", None),
        ("bad", "kept", None),
    ]


def test_refined_when_an_accepted_refine_changed_it(tmp_path: Path) -> None:
    run = folder(
        tmp_path,
        operators=[operator(1, "refine", ["good"]), operator(2, "refine", ["good"])],
        gates=[
            gate(1, accepted=True, skills_after=["bad", "good"]),
            gate(2, accepted=True, skills_after=["bad", "good"]),
        ],
    )
    good = outcome(run, LIBRARY, "good")
    assert (good.fate, good.fate_iteration) == ("refined", 2)
    assert outcome(run, LIBRARY, "bad").fate == "kept"


def test_merged_when_an_accepted_consolidation_removed_it(tmp_path: Path) -> None:
    run = folder(
        tmp_path,
        operators=[operator(2, "consolidate", ["bad", "good"], removed=["bad"])],
        gates=[
            gate(1, accepted=False, skills_after=["bad", "good"]),
            gate(2, accepted=True, skills_after=["good"]),
        ],
    )
    bad = outcome(run, LIBRARY, "bad")
    assert (bad.fate, bad.fate_iteration) == ("merged", 2)


def test_a_removal_after_a_refinement_is_the_fate(tmp_path: Path) -> None:
    run = folder(
        tmp_path,
        operators=[operator(1, "refine", ["bad"]), operator(2, "prune", ["bad"], ["bad"])],
        gates=[
            gate(1, accepted=True, skills_after=["bad", "good"]),
            gate(2, accepted=True, skills_after=["good"]),
        ],
    )
    bad = outcome(run, LIBRARY, "bad")
    assert (bad.fate, bad.fate_iteration) == ("pruned", 2)


def test_u1_is_the_critics_pre_probe_utility_when_the_probe_decided(tmp_path: Path) -> None:
    # The critic credited `bad` +0.6; the probe measured it harmful and overrode the direction.
    hurts = SkillEffect(
        agent=AGENT, skill="bad", effect=-0.5, low=-0.7, high=-0.3, questions=2, verdict="hurts"
    )
    evidence = ProbeEvidence(
        agent=AGENT,
        skill_id="bad",
        effect=-0.5,
        low=-0.7,
        high=-0.3,
        questions=2,
        verdict="hurts",
        critic_utility=0.6,
        critic_verdict="keep",
        contradicts=True,
        decided_by="probe",
    )
    run = folder(
        tmp_path,
        directions=[direction("bad", -0.5, "low_utility")],
        evidence=[evidence],
        effects=[hurts],
    )
    bad = outcome(run, LIBRARY, "bad")
    assert (bad.u1, bad.critic_verdict, bad.decided_by) == (0.6, "keep", "probe")
    assert (bad.probe_effect, bad.probe_low, bad.probe_high) == (-0.5, -0.7, -0.3)
    assert (bad.probe_verdict, bad.probe_confidence) == ("hurts", 0.8)
    assert bad.sign_correct is False
    console = Console(record=True, width=200)
    print_planted(console, [bad], probe=True)
    assert "probe effect [80%]" in console.export_text()


def test_u1_is_none_for_a_skill_only_the_probe_credited(tmp_path: Path) -> None:
    evidence = ProbeEvidence(
        agent=AGENT, skill_id="bad", effect=-0.5, verdict="hurts", decided_by="probe"
    )
    run = folder(tmp_path, directions=[direction("bad", -0.5, "low_utility")], evidence=[evidence])
    bad = outcome(run, LIBRARY, "bad")
    assert bad.u1 is None and bad.critic_verdict is None and bad.decided_by == "probe"


def test_u1_is_the_directions_utility_without_probe_evidence(tmp_path: Path) -> None:
    run = folder(tmp_path, directions=[direction("good", 0.4, "keep")])
    good = outcome(run, LIBRARY, "good")
    assert (good.u1, good.critic_verdict, good.decided_by) == (0.4, "keep", "critic")
    assert good.probe_effect is None and good.probe_verdict is None
    bad = outcome(run, LIBRARY, "bad")
    assert bad.u1 is None and bad.decided_by == "none"


def test_without_a_first_plan_nothing_is_credited(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    [good, bad] = planted_outcomes(run, LIBRARY)
    assert good.u1 is None and good.decided_by is None and good.fate == "kept"
    assert (bad.agent, bad.skill, bad.kind) == (AGENT, "bad", "harmful")


def made(kind: PlantedKind, u1: float | None, fate: str = "kept") -> PlantedSkillOutcome:
    return PlantedSkillOutcome.model_validate(
        {"agent": AGENT, "skill": "s", "kind": kind, "u1": u1, "fate": fate}
    )


@pytest.mark.parametrize(
    ("kind", "u1", "expected"),
    [
        ("helpful", 0.5, True),
        ("helpful", -0.5, False),
        ("harmful", -0.5, True),
        ("harmful", 0.5, False),
        ("harmful", 0.0, None),
        ("helpful", None, None),
    ],
)
def test_sign_correct(kind: PlantedKind, u1: float | None, expected: bool | None) -> None:
    assert made(kind, u1).sign_correct is expected


@pytest.mark.parametrize(
    ("kind", "fate", "expected"),
    [
        ("harmful", "pruned", True),
        ("harmful", "merged", True),
        ("harmful", "refined", True),
        ("harmful", "kept", False),
        ("helpful", "kept", True),
        ("helpful", "refined", True),
        ("helpful", "pruned", False),
        ("helpful", "merged", False),
    ],
)
def test_repaired(kind: PlantedKind, fate: str, expected: bool) -> None:
    assert made(kind, 0.1, fate).repaired is expected


def test_separation_is_helpful_mean_minus_harmful_mean() -> None:
    outcomes = [
        made("helpful", 0.6),
        made("helpful", 0.2),
        made("helpful", None),
        made("harmful", -0.2),
    ]
    assert separation(outcomes) == pytest.approx(0.6)


def test_separation_needs_a_credited_skill_of_each_kind() -> None:
    assert separation([made("helpful", 0.6), made("harmful", None)]) is None
    assert separation([made("harmful", -0.6)]) is None


def test_the_demo_counts_repairs_per_kind() -> None:
    outcomes = [
        made("helpful", None, "kept"),
        made("harmful", -0.3, "pruned"),
        made("harmful", None, "kept"),
    ]
    console = Console(record=True, width=200)
    print_planted(console, outcomes, probe=True)
    text = console.export_text()
    assert "harmful removed or rewritten 1 of 2; helpful kept 1 of 1;" in text
    assert "critic signs right 1 of 3 (2 without a credit)" in text


def test_report_md_shows_the_cells_the_demo_prints() -> None:
    outcomes = [
        PlantedSkillOutcome(
            agent=AGENT,
            skill="bad",
            kind="harmful",
            u1=0.6,
            probe_effect=-0.5,
            probe_low=-0.7,
            probe_high=-0.3,
            probe_verdict="hurts",
            probe_confidence=0.8,
            decided_by="probe",
            fate="pruned",
            fate_iteration=1,
        ),
        made("helpful", None),
    ]
    console = Console(record=True, width=250)
    print_planted(console, outcomes, probe=True)
    printed = console.export_text()
    report = "\n".join(planted_lines(outcomes, probe=True))
    assert "| agent | skill | kind | critic u1 | probe effect [80%] | decided by | fate |" in report
    bad = "+0.60 (sign wrong) | -0.500 [-0.700, -0.300] hurts | probe | pruned (iteration 1) |"
    assert f"| {AGENT} | bad | harmful | {bad}" in report
    assert f"| {AGENT} | s | helpful | silent | no pair | - | kept |" in report
    for cells in (planted_row(o, probe=True) for o in outcomes):
        assert all(cell in printed for cell in cells)
    summary = repair_summary(outcomes)
    assert summary in report and summary in " ".join(printed.split())


def test_no_planted_library_no_section() -> None:
    assert planted_lines([], probe=True) == []
