"""The live progress line of a training run: its counts, and how it shares the console."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from grse_graph.training.progress import ProgressEvent
from grse_graph.training.terminal import LiveProgress, ProgressTracker

_ESCAPE = re.compile(r"\x1b\[(\??)([\d;]*)([A-Za-z])")


def screen(output: str) -> list[str]:
    """The lines a terminal shows after `output`: text, CR, LF (as a tty does, CR+LF), and the
    escape sequences rich's `Live` writes (cursor up, erase line; the rest is ignored)."""
    lines, row, col, i = [""], 0, 0, 0
    while i < len(output):
        escape = _ESCAPE.match(output, i)
        if escape:
            private, number, code = escape.groups()
            if not private and code == "A":
                row = max(0, row - int(number or 1))
            elif not private and code == "K":
                lines[row] = "" if number == "2" else lines[row][:col]
            i = escape.end()
            continue
        char, i = output[i], i + 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + char + line[col + 1 :]
            col += 1
    shown = [line.rstrip() for line in lines]
    while shown and not shown[-1]:
        shown.pop()
    return shown


def cells(header: str, row: str) -> dict[str, str]:
    """A rendered tracker table (header line, value line) as column -> value."""
    names = re.split(r"\s{2,}", header.strip())
    values = re.split(r"\s{2,}", row.strip())
    assert len(names) == len(values), (header, row)
    return dict(zip(names, values, strict=True))


def shown(tracker: ProgressTracker) -> dict[str, str]:
    console = Console(file=io.StringIO(), width=120)
    console.print(tracker.render())
    assert isinstance(console.file, io.StringIO)
    return cells(*console.file.getvalue().splitlines())


def event(kind: str, iteration: int, stage: str, **fields: object) -> ProgressEvent:
    return ProgressEvent.model_validate(
        {"kind": kind, "iteration": iteration, "stage": stage, **fields}
    )


def drive(console: Console) -> None:
    """A display over the last stage of a one-iteration run, with prints during it, during a
    pause (the reviewer) and after it."""
    tracker = ProgressTracker(iterations=1, clock=lambda: 0.0)
    with LiveProgress(tracker, console) as live:
        live(event("stage_started", 1, "report", total=1))
        console.print("during")
        with live.paused():
            console.print("review line")
        live(event("run_done", 1, "report"))
    console.print("iteration 1: validation base 0.278")


def test_a_print_after_the_display_on_a_file_or_pipe_starts_a_line_of_its_own() -> None:
    out = io.StringIO()
    drive(Console(file=out, width=120))
    assert "\x1b" not in out.getvalue()  # nothing to redraw in a file: plain lines only
    lines = screen(out.getvalue())
    # rich's Live left its last frame unterminated here (it ends the line only on terminals).
    assert lines[-1] == "iteration 1: validation base 0.278"
    assert cells(*lines[-3:-1])["stage"] == "done"
    assert "review line" in lines
    assert out.getvalue().endswith("\n")


def test_prints_on_a_terminal_start_their_own_lines_and_survive_a_resumed_display(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, force_interactive=True, width=120)
    drive(console)
    lines = screen(out.getvalue())
    assert lines[-1] == "iteration 1: validation base 0.278"
    assert cells(*lines[-3:-1])["stage"] == "done"
    assert lines[0] == "during"
    # A restarted Live first moved the cursor up over its old frame: it erased the reviewer's
    # last printed line.
    assert "review line" in lines
    assert lines.index("during") < lines.index("review line") < len(lines) - 3
    assert out.getvalue().endswith("\n")


def test_the_units_read_total_over_total_when_a_stage_or_the_run_is_done() -> None:
    tracker = ProgressTracker(iterations=1, clock=lambda: 0.0)
    tracker(event("stage_started", 1, "rollouts", total=2))
    for unit in ("r1", "r2"):
        tracker(event("unit_done", 1, "rollouts", unit_id=unit))
    assert (shown(tracker)["units"], shown(tracker)["rollouts"]) == ("2/2", "2/2")
    tracker(event("stage_started", 1, "commit", total=1))
    assert shown(tracker)["units"] == "0/1"
    tracker(event("iteration_done", 1, "commit"))  # commit reports no unit of its own
    assert shown(tracker)["units"] == "1/1"
    tracker(event("stage_started", 1, "report", total=1))
    tracker(event("run_done", 1, "report"))
    assert (shown(tracker)["stage"], shown(tracker)["units"]) == ("done", "1/1")
    assert shown(tracker)["ETA"] == "0:00:00"


def test_units_of_another_stage_are_not_counted_in_the_stage_under_way() -> None:
    # SkillMAS sends its validation units along with its rollouts.
    tracker = ProgressTracker(iterations=1, clock=lambda: 0.0)
    tracker(event("stage_started", 1, "rollouts", total=2))
    for unit in ("r1", "v1", "r2", "v2"):
        stage = "rollouts" if unit.startswith("r") else "validation"
        tracker(event("unit_done", 1, stage, unit_id=unit))
    assert (shown(tracker)["units"], shown(tracker)["rollouts"]) == ("2/2", "2/2")


def test_the_probe_stage_counts_its_runs_and_estimates_their_remaining_time() -> None:
    now = [0.0]
    tracker = ProgressTracker(iterations=1, clock=lambda: now[0])
    tracker(event("stage_started", 1, "critic", total=1))
    tracker(event("unit_done", 1, "critic", unit_id="c1"))
    tracker(event("stage_started", 1, "probe", total=4))
    tracker(event("unit_done", 1, "probe", unit_id="p1", reused=True))
    now[0] = 10.0
    tracker(event("unit_done", 1, "probe", unit_id="p2"))
    assert (shown(tracker)["stage"], shown(tracker)["units"]) == ("probe", "2/4 (1 reused)")
    # 2 runs left at the 10 s the one fresh run took; no iteration after this one.
    assert tracker.eta() == pytest.approx(20.0)
    tracker(event("stage_started", 1, "aggregate", total=1))
    assert (shown(tracker)["stage"], shown(tracker)["units"]) == ("aggregate", "0/1")
