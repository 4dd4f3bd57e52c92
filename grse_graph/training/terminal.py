"""Terminal side of a training run: the live progress line and the interactive skill review."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from .progress import ProgressEvent
from .review import ReviewAnswer, ReviewRequest


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = max(0, int(seconds))
    return f"{seconds // 3600:d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class ProgressTracker:
    """Folds progress events into what the live display shows.

    The units column counts the `unit_done` events of the stage under way (events of another
    stage, such as the validation units SkillMAS sends along with its rollouts, go elsewhere);
    `iteration_done` and `run_done` finish that stage, so its count then reads total/total
    even when the stage does not report its units one by one (commit, report).

    ETA: the current stage's remaining units at its observed rate, plus the mean duration of a
    finished iteration for every iteration still to come (unknown until one has finished).
    """

    def __init__(
        self,
        iterations: int,
        tokens: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.iterations = iterations
        self._tokens = tokens
        self._clock = clock
        self.started = clock()
        self.iteration = 0
        self.stage = "setup"
        self.total = 0
        self.done = 0
        self.reused = 0
        self.rollouts_done = 0
        self.rollouts_total = 0
        self._stage_started = self.started
        self._iteration_started = self.started
        self._iteration_times: list[float] = []

    def __call__(self, event: ProgressEvent) -> None:
        now = self._clock()
        if event.kind == "stage_started":
            if event.iteration != self.iteration:
                self._iteration_started = now
            self.iteration, self.stage = event.iteration, event.stage
            self.total, self.done, self.reused = event.total, 0, 0
            self._stage_started = now
            if event.stage == "rollouts":
                self.rollouts_total, self.rollouts_done = event.total, 0
        elif event.kind == "unit_done":
            if event.stage == "rollouts":
                self.rollouts_done += 1
            if (event.iteration, event.stage) == (self.iteration, self.stage):
                self.done += 1
                self.reused += int(event.reused)
        elif event.kind == "iteration_done":
            self._iteration_times.append(now - self._iteration_started)
            self._iteration_started = now
            self._finish_stage()
        elif event.kind == "run_done":
            self._finish_stage()
            self.stage = "done"

    def _finish_stage(self) -> None:
        """The stage under way is over: every one of its units is done."""
        self.done = max(self.done, self.total)

    def elapsed(self) -> float:
        """Seconds since the tracker was created."""
        return self._clock() - self.started

    def eta(self) -> float | None:
        """Estimated seconds to the end of the run, or None while unknown."""
        now = self._clock()
        stage_left = 0.0
        fresh = self.done - self.reused
        if self.total and fresh > 0:
            stage_left = (now - self._stage_started) / fresh * (self.total - self.done)
        remaining_iterations = max(0, self.iterations - self.iteration)
        if remaining_iterations == 0:
            return stage_left
        if not self._iteration_times:
            return None
        mean = sum(self._iteration_times) / len(self._iteration_times)
        return stage_left + remaining_iterations * mean

    def render(self) -> Table:
        """One-row table: iteration, stage, units, rollouts, tokens, elapsed, ETA."""
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("iteration", "stage", "units", "rollouts", "tokens", "elapsed", "ETA"):
            table.add_column(column)
        units = f"{self.done}/{self.total}" if self.total else "-"
        if self.reused:
            units += f" ({self.reused} reused)"
        tokens = str(self._tokens()) if self._tokens is not None else "-"
        table.add_row(
            f"{self.iteration}/{self.iterations}",
            self.stage,
            units,
            f"{self.rollouts_done}/{self.rollouts_total}",
            tokens,
            _clock(self.elapsed()),
            _clock(self.eta()),
        )
        return table


class LiveProgress:
    """The tracker's progress line while a run goes on (a context manager, fed the events).

    On an interactive terminal a rich `Live` redraws the line in place: what the console prints
    meanwhile goes above it, and when the display stops (at the end, or in `paused`) rich ends
    the line, so the next print starts on a line of its own. Where nothing can be redrawn (a
    file, a pipe, a dumb terminal) no `Live` is used: there rich writes the last frame when it
    stops but ends the line only on a terminal, which glued the next print to it. The display
    prints the line instead, an ordinary finished line, each time it stops.
    """

    def __init__(self, tracker: ProgressTracker, console: Console) -> None:
        self.tracker = tracker
        self._console = console
        self._live: Live | None = None

    def __call__(self, event: ProgressEvent) -> None:
        self.tracker(event)
        if self._live is not None:
            self._live.update(self.tracker.render())

    def __enter__(self) -> LiveProgress:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stop redrawing (for example while the reviewer types), then resume."""
        self._stop()
        try:
            yield
        finally:
            self._start()

    def _start(self) -> None:
        if not self._console.is_interactive:
            return
        # A new `Live` on every start: a restarted one would first move the cursor up over the
        # lines of its previous frame, which are by then the last lines printed while paused.
        self._live = Live(self.tracker.render(), console=self._console, refresh_per_second=2)
        self._live.start(refresh=True)

    def _stop(self) -> None:
        if self._live is None:
            self._console.print(self.tracker.render())
            return
        live, self._live = self._live, None
        live.stop()


class TerminalReviewer:
    """Asks accept / reject / edit for each proposed skill change.

    Edit opens `$EDITOR` on the proposed SKILL.md body when set; otherwise the replacement body
    is read from the terminal up to a line holding a single `.`.
    """

    def __init__(
        self,
        console: Console,
        ask: Callable[[str], str] = input,
        editor: str | None = None,
    ) -> None:
        self.console = console
        self._ask = ask
        self._editor = editor if editor is not None else os.environ.get("EDITOR")

    def __call__(self, request: ReviewRequest) -> ReviewAnswer:
        self.console.rule(
            f"iteration {request.iteration}: {request.change} skill "
            f"{escape(request.agent)}/{escape(request.skill)}"
        )
        self.console.print(Syntax(request.diff or "(no textual difference)", "diff"))
        while True:
            choice = self._ask("[a]ccept / [r]eject / [e]dit? ").strip().lower()
            if choice in {"a", "accept"}:
                return ReviewAnswer(verdict="accept")
            if choice in {"r", "reject"}:
                return ReviewAnswer(verdict="reject")
            if choice in {"e", "edit"}:
                body = self._edit(request)
                if body.strip():
                    return ReviewAnswer(verdict="edit", body=body)
                self.console.print("empty body; choose again")

    def _edit(self, request: ReviewRequest) -> str:
        start = _body_of(request.after or request.before or "")
        if self._editor:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / f"{request.skill}.md"
                path.write_text(start, encoding="utf-8")
                subprocess.run([*shlex.split(self._editor), str(path)], check=False)
                return path.read_text(encoding="utf-8")
        self.console.print("Type the new skill body; end with a line holding a single '.'")
        lines: list[str] = []
        while (line := self._ask("")) != ".":
            lines.append(line)
        return "\n".join(lines) + "\n"


def _body_of(markdown: str) -> str:
    """The body of a SKILL.md text (what follows the closing front-matter fence)."""
    if markdown.startswith("---"):
        _, _, rest = markdown.partition("\n---")
        return rest.partition("\n")[2].lstrip("\n")
    return markdown
