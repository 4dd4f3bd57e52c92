"""Output that reads in a log: where stdout is not a terminal, a table is printed whole, one
line per row, instead of wrapped cell by cell at 80 columns."""

from __future__ import annotations

import pytest

from grse_graph.output import LOG_WIDTH, output_console
from grse_graph.training.demo import print_planted
from grse_graph.training.repair import PlantedSkillOutcome

LONG_SKILL = "hand-on-the-candidate-as-a-full-sentence-with-its-supporting-evidence"


def outcome(skill: str) -> PlantedSkillOutcome:
    return PlantedSkillOutcome.model_validate(
        {
            "agent": "retriever",
            "skill": skill,
            "kind": "harmful",
            "u1": None,
            "fate": "pruned",
            "fate_iteration": 1,
            "probe_effect": -0.113,
            "probe_low": -0.203,
            "probe_high": -0.028,
            "probe_verdict": "hurts",
            "probe_confidence": 0.8,
            "decided_by": "probe",
        }
    )


def test_a_table_printed_to_a_pipe_keeps_each_row_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    console = output_console()
    assert console.width == LOG_WIDTH
    print_planted(console, [outcome(LONG_SKILL)], probe=True)
    lines = capsys.readouterr().out.splitlines()
    row = [line for line in lines if LONG_SKILL in line]
    assert len(row) == 1, lines
    assert "pruned (iteration 1)" in row[0] and "-0.113" in row[0], row
    # As wide as its content, not as the console.
    assert max(len(line) for line in lines) < 400


def test_messages_beside_a_json_result_go_to_stderr_just_as_wide(
    capsys: pytest.CaptureFixture[str],
) -> None:
    console = output_console(stderr=True)
    assert console.width == LOG_WIDTH
    console.print("note")
    captured = capsys.readouterr()
    assert captured.err == "note\n" and captured.out == ""
