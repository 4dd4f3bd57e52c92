"""Running `grse train` / `grse eval` as black boxes against the fake server, killing them at
chosen points and checking what they left in the run folder. Shared by the fault tests and
``benchmarks/faults.py``."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grse_graph.jsonl import JsonlStore
from grse_graph.skills import SkillLibrary
from grse_graph.training.lock import LOCK_NAME
from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import FakeOpenAIServer, Match, RequestRecord

REPO_ROOT = Path(__file__).resolve().parents[2]

# Two iterations so that the second has a skill to credit: its aggregate stage then makes a
# merge call (the first iteration's aggregate makes none: nothing to merge yet).
TRAIN_FLAGS = (
    "--task", "demo", "--iterations", "2", "--batch-size", "2", "--group-size", "2",
    "--validation-size", "2", "--concurrency", "1", "--library-limit", "2",
)  # fmt: skip


def grse_argv(*args: str) -> list[str]:
    """The `grse` command line, run with this interpreter."""
    return [sys.executable, "-c", "from grse_graph.cli import main; main()", *args]


def child_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of a `grse` child: ours, without GRSE_* settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRSE_")}
    env.update(
        {
            "PYTHONPATH": str(REPO_ROOT),
            "LANGSMITH_TRACING": "false",
            "COLUMNS": "200",
            "NO_COLOR": "1",
            "TERM": "dumb",
            **extra,
        }
    )
    return env


def start_grse(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[str]:
    """Start `grse ARGS` with output captured."""
    return subprocess.Popen(
        grse_argv(*args),
        cwd=cwd,
        env=child_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )


@dataclass(frozen=True)
class Finished:
    """How a `grse` process ended."""

    returncode: int
    stdout: str
    stderr: str
    wall_s: float

    @property
    def error_lines(self) -> list[str]:
        """The non-empty stderr lines."""
        return [line for line in self.stderr.splitlines() if line.strip()]


def finish(process: subprocess.Popen[str], started: float, timeout_s: float = 120.0) -> Finished:
    """Wait for a process (killing it after `timeout_s`) and collect its output."""
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    return Finished(process.returncode, stdout, stderr, time.perf_counter() - started)


def run_grse(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path,
    timeout_s: float = 120.0,
    **kw: object,
) -> Finished:
    """Run `grse ARGS` to its end."""
    started = time.perf_counter()
    return finish(start_grse(args, env, cwd=cwd, **kw), started, timeout_s)  # type: ignore[arg-type]


# -- the run folder ----------------------------------------------------------------------------


def stores(run: RunFolder) -> dict[str, JsonlStore[Any]]:
    """Every JSONL store the run folder declares (found by type: robust to new ones)."""
    return {store.path.name: store for store in vars(run).values() if isinstance(store, JsonlStore)}


def unit_keys(run: RunFolder) -> dict[str, list[str]]:
    """Per keyed JSONL file, the key of every record in file order (a unit id or iteration)."""
    found: dict[str, list[str]] = {}
    for name, store in stores(run).items():
        key = getattr(store, "_key", None)  # the store's own index function (None: unkeyed)
        if key is None or not store.path.exists():
            continue
        found[name] = [str(key(record)) for record in store.read()]
    return found


def finished_units(run_path: Path) -> int:
    """How many keyed records (finished units) the run folder holds."""
    return sum(len(keys) for keys in unit_keys(RunFolder(run_path)).values())


def repeated_units(run_path: Path) -> list[str]:
    """Keys recorded more than once in one file: a finished unit that was done again."""
    repeated: list[str] = []
    for name, keys in unit_keys(RunFolder(run_path)).items():
        repeated += [f"{name}:{key}" for key, count in Counter(keys).items() if count > 1]
    return repeated


def _json_lines(path: Path) -> list[object]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _json(path: Path) -> object:
    return json.loads(path.read_text("utf-8"))


def _library(folder: Path) -> object:
    return SkillLibrary.load(folder, agent=folder.name.split(".")[0])


def unparsable_files(run_path: Path) -> list[str]:
    """Every artifact of the run folder that does not read back, with the problem."""
    run = RunFolder(run_path)
    problems: list[str] = []
    declared = stores(run)

    def attempt(label: str, check: Callable[[], object]) -> None:
        try:
            check()
        except Exception as error:  # any failure to read back is a finding
            problems.append(f"{label}: {type(error).__name__}: {error}")

    for path in sorted(run_path.rglob("*")):
        if not path.is_file():
            continue
        relative = str(path.relative_to(run_path))
        store = declared.get(path.name) if path.parent == run_path else None
        if store is not None:
            attempt(relative, store.read)
        elif path.suffix == ".jsonl":
            attempt(relative, functools.partial(_json_lines, path))
        elif path.suffix == ".json":
            attempt(relative, functools.partial(_json, path))
        elif path.suffix == ".sqlite":
            attempt(relative, functools.partial(_sqlite_ok, path))
    if run.config_path.exists():
        attempt("config.json", run.read_config)
    for root in ("libraries", "candidates"):
        for folder in sorted((run_path / root).glob("iter_*/[!.]*")):  # ".x": see leftovers
            if folder.is_dir():
                attempt(str(folder.relative_to(run_path)), functools.partial(_library, folder))
    return problems


def _sqlite_ok(path: Path) -> None:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (verdict,) = connection.execute("PRAGMA integrity_check").fetchone()
        if verdict != "ok":
            raise ValueError(f"integrity_check: {verdict}")
    finally:
        connection.close()


def leftovers(run_path: Path) -> list[str]:
    """Temporary files a crash left behind (informative: a later write replaces them)."""
    return sorted(
        str(p.relative_to(run_path))
        for p in run_path.rglob("*")
        if (p.name.startswith(".") and p.name != LOCK_NAME) or p.name.endswith(".tmp")
    )


@dataclass(frozen=True)
class Setup:
    """What every session of a matrix runs: the training flags and extra environment (model
    caps, the role timeout) on top of the server's endpoints."""

    flags: tuple[str, ...] = TRAIN_FLAGS
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 5.0
    session_timeout_s: float = 120.0

    def environment(self, server: FakeOpenAIServer) -> dict[str, str]:
        return {**server.env(timeout_s=self.timeout_s), **self.env}


# -- killing at a point ------------------------------------------------------------------------


@dataclass(frozen=True)
class KillPoint:
    """Where to kill `grse train`: at the `nth` request matching `match`, or (stages without
    model calls) as soon as `watch` (a path in the run folder) appears."""

    stage: str
    match: Match | None = None
    nth: int = 1
    watch: str | None = None
    repeat_bound: int = 2
    """At most this many requests may be made twice: the killed one and the earlier requests
    of the same unfinished unit (e.g. a rollout's first agent call)."""


KILL_POINTS: tuple[KillPoint, ...] = (
    KillPoint("rollouts", Match(role="actor"), nth=3),
    KillPoint("critic", Match(role="critic", tool="CriticOutput"), nth=2),
    KillPoint("aggregate", Match(role="optimizer", tool="MergedDirection"), nth=1),
    KillPoint("evolve", Match(role="optimizer", tool="SkillDraft"), nth=1),
    KillPoint("validation", Match(role="actor"), nth=12),
    KillPoint("commit", watch="libraries/iter_1", repeat_bound=0),
)
"""One kill per stage of a fresh run (the numbers are counted from the start of the run)."""

CHAIN_POINTS: tuple[KillPoint, ...] = (
    KillPoint("rollouts", Match(role="actor"), nth=3),
    KillPoint("critic", Match(role="critic", tool="CriticOutput"), nth=1),
    KillPoint("evolve", Match(role="optimizer", tool="SkillDraft"), nth=1),
    KillPoint("validation", Match(role="actor"), nth=2),
    KillPoint("commit", watch="libraries/iter_1", repeat_bound=0),
    KillPoint("aggregate", Match(role="optimizer", tool="MergedDirection"), nth=1),
)
"""The same stages killed one after the other in ONE run, each session resuming the previous
one (numbers counted from the start of each session; aggregate is the second iteration's)."""


_WATCHER = """
import os, sys, time
path, pid = sys.argv[1], int(sys.argv[2])
while not os.path.exists(path):
    time.sleep(0.0005)
try:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:  # still our grse, not a reused pid
        if b"grse_graph.cli" in handle.read():
            os.kill(pid, 9)
except (FileNotFoundError, ProcessLookupError):
    pass
"""


def kill_when_exists(path: Path, pid: int) -> subprocess.Popen[bytes]:
    """A watcher process that SIGKILLs `pid` as soon as `path` exists. A process of its own
    (started without site packages) so that it reacts within a millisecond, whatever the
    threads of this process are doing; terminate it if the path may never appear."""
    return subprocess.Popen([sys.executable, "-S", "-c", _WATCHER, str(path), str(pid)])


@dataclass
class Reference:
    """An uninterrupted run: its requests in order."""

    records: list[RequestRecord]
    wall_s: float

    @property
    def fingerprints(self) -> Counter[str]:
        return Counter(r.fingerprint for r in self.records)


def reference_run(
    workdir: Path, make_server: Callable[[], FakeOpenAIServer], setup: Setup = Setup()
) -> Reference:
    """Train once without interruption and record every request."""
    with make_server() as server:
        args = ["train", *setup.flags, "--out", "reference"]
        done, records = _session(args, None, server, workdir, workdir / "reference", setup)
        if done.returncode != 0:
            raise AssertionError(f"reference run failed: {done.stderr[-2000:]}")
        return Reference(records, done.wall_s)


@dataclass
class KillOutcome:
    """What one kill point did."""

    point: KillPoint
    killed: Finished
    resumed: Finished
    before: list[RequestRecord]
    after: list[RequestRecord]
    units_before_kill: int
    problems_after_kill: list[str]
    problems_after_resume: list[str]
    repeated: list[str]
    leftovers: list[str] = field(default_factory=list)

    def calls_repeated(self, reference: Reference) -> int:
        """Requests the killed run and the resumed run made beyond the uninterrupted run."""
        made = Counter(r.fingerprint for r in [*self.before, *self.after])
        return sum((made - reference.fingerprints).values())

    def calls_missing(self, reference: Reference) -> int:
        """Requests of the uninterrupted run neither session made (must be 0)."""
        made = Counter(r.fingerprint for r in [*self.before, *self.after])
        return sum((reference.fingerprints - made).values())


def _session(
    args: Sequence[str],
    point: KillPoint | None,
    server: FakeOpenAIServer,
    workdir: Path,
    run_path: Path,
    setup: Setup,
) -> tuple[Finished, list[RequestRecord]]:
    """One `grse train` session, killed at `point` (None: run to the end)."""
    server.reset()
    started = time.perf_counter()
    process = start_grse(args, setup.environment(server), cwd=workdir)
    watcher = None
    if point is not None and point.watch is not None:
        watcher = kill_when_exists(run_path / point.watch, process.pid)
    elif point is not None:
        assert point.match is not None
        server.kill_on(process.pid, point.nth, point.match)
    done = finish(process, started, setup.session_timeout_s)
    if watcher is not None:
        watcher.kill()
        watcher.wait()
    return done, server.records


@dataclass
class ChainStep:
    """One killed session of a kill chain and the run folder it left."""

    point: KillPoint
    killed: Finished
    requests: list[RequestRecord]
    units_before_kill: int
    problems: list[str]
    repeated: list[str]
    gate_iterations: list[int]


def kill_chain(
    points: Sequence[KillPoint],
    workdir: Path,
    make_server: Callable[[], FakeOpenAIServer],
    name: str = "chain",
    setup: Setup = Setup(),
) -> tuple[list[ChainStep], Finished, list[RequestRecord]]:
    """Kill one run at every point in turn (each session resumes the last), then finish it."""
    run_path = workdir / name
    steps: list[ChainStep] = []
    with make_server() as server:
        for index, point in enumerate(points):
            first = ["train", *setup.flags, "--out", name]
            args = first if index == 0 else ["train", "--resume", name]
            killed, requests = _session(args, point, server, workdir, run_path, setup)
            steps.append(
                ChainStep(
                    point=point,
                    killed=killed,
                    requests=requests,
                    units_before_kill=finished_units(run_path),
                    problems=unparsable_files(run_path),
                    repeated=repeated_units(run_path),
                    gate_iterations=[g.iteration for g in RunFolder(run_path).gate.read()],
                )
            )
        final, requests = _session(
            ["train", "--resume", name], None, server, workdir, run_path, setup
        )
    return steps, final, requests


def kill_and_resume(
    point: KillPoint,
    workdir: Path,
    make_server: Callable[[], FakeOpenAIServer],
    name: str,
    setup: Setup = Setup(),
) -> KillOutcome:
    """Start a run, kill it at `point`, check the folder, resume it and check again."""
    run_path = workdir / name
    with make_server() as server:
        first = ["train", *setup.flags, "--out", name]
        killed, before = _session(first, point, server, workdir, run_path, setup)
        units = finished_units(run_path)
        problems_killed = unparsable_files(run_path)
        left = leftovers(run_path)
        resumed, after = _session(
            ["train", "--resume", name], None, server, workdir, run_path, setup
        )
    return KillOutcome(
        point=point,
        killed=killed,
        resumed=resumed,
        before=before,
        after=after,
        units_before_kill=units,
        problems_after_kill=problems_killed,
        problems_after_resume=unparsable_files(run_path),
        repeated=repeated_units(run_path),
        leftovers=left,
    )
