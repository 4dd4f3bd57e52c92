"""Every hostile input of the corpus through the API and `grse skills validate|show`.

Each is rejected with one line naming the file and the problem, or accepted where the Agent
Skills spec allows it; no traceback; no hang (an alarm turns a blocking read into a failure);
nothing outside the folder given is read (traps: writer-less FIFOs, a secret that must never be
printed) and nothing on disk changes.
"""

from __future__ import annotations

import os
import signal
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
import typer
from hostile_corpus import CASES, SECRET, Case
from typer.testing import CliRunner

from grse_graph.cli import skills_cmd
from grse_graph.errors import SkillError
from grse_graph.skills import Skill, SkillLibrary, inspect_path, load_libraries

ALARM_SECONDS = 10


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise TimeoutError("hang: a read blocked (FIFO or device followed?)")


@pytest.fixture
def alarm() -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, ALARM_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _entries(root: Path) -> list[str]:
    """Every path under `root`, parents first, without recursion (trees may be 1,100 deep)."""
    found: list[str] = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                found.append(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return found


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under `root` (symlinks not followed): mode, size, mtime."""
    found: dict[str, tuple[int, int, int]] = {}
    for path in _entries(root):
        info = os.lstat(path)
        found[path] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


def _remove_deep_trees(root: Path) -> None:
    """Remove what the case built, deepest first (`shutil.rmtree` recurses too deep for some)."""
    for path in reversed(_entries(root)):
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)


def _terminal_safe(text: str) -> bool:
    return all(
        char in "\n" or unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Zl", "Zp")
        for char in text
    )


def _app() -> typer.Typer:
    app = typer.Typer()
    skills_cmd.register(app)
    return app


def _load(path: Path, kind: str) -> object:
    if kind == "skill":
        return Skill.load(path)
    if kind == "library":
        return SkillLibrary.load(path, agent="reasoner")
    return load_libraries(path)


def _check_problems(item: Case, problems: list[str]) -> None:
    assert all("\n" not in line and _terminal_safe(line) for line in problems), problems
    assert not any(SECRET in line for line in problems)
    if item.expect == "accept":
        assert problems == [], problems
        return
    assert problems, "accepted, but should be rejected"
    assert any(item.where in line and item.problem in line for line in problems), problems


@pytest.mark.parametrize("item", CASES, ids=[c.id for c in CASES])
def test_hostile_input(item: Case, tmp_path: Path, alarm: None) -> None:
    target = item.build(tmp_path)
    try:
        _check_case(item, target, tmp_path)
    finally:
        _remove_deep_trees(tmp_path)


def _check_case(item: Case, target: Path, tmp_path: Path) -> None:
    before = _snapshot(tmp_path)

    report = inspect_path(target)
    _check_problems(item, report.problems)

    if item.expect == "accept":
        _load(target, report.kind)
    else:
        with pytest.raises(SkillError) as raised:
            _load(target, report.kind)
        message = str(raised.value)
        assert "\n" not in message and _terminal_safe(message) and SECRET not in message

    runner = CliRunner()
    for command in ("validate", "show"):
        result = runner.invoke(_app(), ["skills", command, str(target)])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            command,
            result.exception,
        )
        assert result.exit_code == (0 if item.expect == "accept" else 1), result.output
        assert _terminal_safe(result.output), repr(result.output)
        assert SECRET not in result.output
        if item.expect == "reject":
            assert item.problem in result.output.replace("\n", "")

    assert _snapshot(tmp_path) == before  # nothing written, moved or removed anywhere


def test_corpus_covers_every_class_and_is_large_enough() -> None:
    classes = {c.klass for c in CASES}
    assert len(CASES) >= 150
    assert {
        "boundary: symlink",
        "boundary: loop",
        "boundary: special file",
        "size and depth",
        "yaml front matter",
        "terminal text",
        "pack manifest",
        "interop: spec-valid",
    } <= classes
    assert len({c.id for c in CASES}) == len(CASES)
