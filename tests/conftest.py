"""Shared fixtures: the small-model engine (engine tests) and the shared data folder."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grse_graph.llm.config import EngineSettings, default_cache_dir
from grse_graph.llm.engine import LocalEngine

REPO_ROOT = Path(__file__).resolve().parent.parent
SLOW_TEST_S = 30.0
"""A test slower than this is named with its time as soon as it ends, so a run stopped by a
time limit (CI's) still says where its time went; `--durations` prints only at the end."""


class SlowTestLines:
    """Writes `[slow test] SECONDS NODEID (clock)` after each test slower than `SLOW_TEST_S`."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        if report.when != "call" or report.duration < SLOW_TEST_S or reporter is None:
            return
        reporter.write("\n")  # the dots of the test's file are still on this row
        clock = time.strftime("%H:%M:%S")
        reporter.write_line(f"[slow test] {report.duration:.0f} s {report.nodeid} ({clock})")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SlowTestLines(config), "grse-slow-test-lines")


@pytest.fixture(scope="session")
def small_engine_url() -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT/v1``) of one small-model engine for the whole session.

    Fails (does not skip) when the engine cannot start: engine tests are part of the suite.
    """
    with tempfile.TemporaryDirectory(prefix="grse-engine-log-") as log_dir:
        settings = EngineSettings(
            model="small", n_ctx=4096, threads=2, cache_dir=default_cache_dir()
        )
        engine = LocalEngine(settings, log_path=Path(log_dir) / "engine.log")
        try:
            engine.start()
        except Exception as error:
            pytest.fail(f"cannot start the small-model engine: {error}", pytrace=False)
        try:
            yield engine.base_url
        finally:
            engine.stop()


@pytest.fixture()
def shared_data_dir() -> Path:
    """``$GRSE_SHARED_DATA`` or ``../shared/data`` next to the repository; skip when absent."""
    configured = os.environ.get("GRSE_SHARED_DATA")
    path = Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip("../shared/data not present")
    return path


ALLOWED_SKIPS_FILE = REPO_ROOT / ".ci" / "allowed_skips.txt"
"""The named tests CI lets skip: one node-id prefix a line, `#` starts a reason."""


def _allowed_skip_prefixes() -> list[str]:
    if not ALLOWED_SKIPS_FILE.is_file():
        return []
    lines = ALLOWED_SKIPS_FILE.read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def _unlisted_skips(session: pytest.Session) -> list[str]:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return []
    allowed = _allowed_skip_prefixes()
    unlisted = []
    for report in reporter.stats.get("skipped", []):
        nodeid = getattr(report, "nodeid", "")
        if "shared_data" in getattr(report, "keywords", {}):
            continue
        if any(nodeid.startswith(prefix) for prefix in allowed):
            continue
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        unlisted.append(f"{nodeid}: {reason}")
    return unlisted


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """On CI (`CI=true`, as .ci/run runs), a skip is a failure unless the test needs
    ../shared (`shared_data`) or is named in .ci/allowed_skips.txt: a skipped engine test
    must not read as a pass."""
    if os.environ.get("CI") != "true":
        return
    unlisted = _unlisted_skips(session)
    if not unlisted:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"{len(unlisted)} skip(s) not allowed on CI (.ci/allowed_skips.txt):")
        for line in unlisted:
            reporter.write_line(f"  {line}")
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
