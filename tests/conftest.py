"""Shared fixtures: the small-model engine (engine tests) and the shared data folder."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from grse_graph.llm.config import EngineSettings, default_cache_dir
from grse_graph.llm.engine import LocalEngine

REPO_ROOT = Path(__file__).resolve().parent.parent


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
