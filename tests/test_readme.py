"""The README's Python examples run as written (unit ones always, engine ones on the engine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"<!-- readme-test: (\w+) -->\s*```python\n(.*?)```", re.DOTALL)


def readme_examples(kind: str) -> list[str]:
    """The Python blocks of the README tagged with `<!-- readme-test: KIND -->`."""
    return [code for tag, code in BLOCK.findall(README.read_text(encoding="utf-8")) if tag == kind]


def test_readme_has_exactly_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", setup, re.DOTALL)
    assert [c.strip() for c in commands] == [
        "pip install -e '.[local]' && grse demo",
        "pip install -e '.[local,dev]' && python -m pytest",
    ]
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1].strip() in ci


def run_example(code: str, env: dict[str, str]) -> str:
    """Run one example in a fresh interpreter, as a reader pasting it would; return stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("code", readme_examples("unit"))
def test_readme_unit_example_runs(code: str) -> None:
    assert "## Skills" in run_example(code, {})


@pytest.mark.engine
@pytest.mark.parametrize("code", readme_examples("engine"))
def test_readme_engine_example_runs(code: str, small_engine_url: str) -> None:
    out = run_example(code, {"GRSE_ACTOR_BASE_URL": small_engine_url})
    assert '"prompt_tokens"' in out


@pytest.mark.parametrize("code", readme_examples("api"))
def test_readme_python_api_example_runs_against_the_fake_server(code: str) -> None:
    # No engine: every role points at the fake OpenAI-compatible server, as a reader's
    # GRSE_<ROLE>_BASE_URL would point at theirs.
    with FakeOpenAIServer() as server:
        out = run_example(code, server.env())
    if "SilentMethod" in code:
        assert "'critic': 0, 'optimizer': 0" in out
    else:
        assert "iteration 1: validation" in out and "test reward" in out and "pack " in out


def test_readme_python_api_section_has_both_examples() -> None:
    text = README.read_text(encoding="utf-8")
    assert "## Python API" in text
    examples = readme_examples("api")
    assert len(examples) == 2 and any("SilentMethod" in code for code in examples)


# -- the integration sections (Studio, LangSmith, PostgreSQL) ---------------------------------


@pytest.mark.parametrize("code", readme_examples("studio"))
def test_readme_studio_context_example_runs(code: str) -> None:
    assert "demo 1 grse True http://127.0.0.1:8000/v1" in run_example(code, {})


@pytest.mark.engine
@pytest.mark.parametrize("code", readme_examples("langsmith"))
def test_readme_langsmith_example_runs_offline(code: str, small_engine_url: str) -> None:
    env = {"GRSE_ACTOR_BASE_URL": small_engine_url, "LANGSMITH_TRACING": "false"}
    # LangSmith prints its experiment banner first; then one line per example with its scores.
    rows = [line for line in run_example(code, env).splitlines() if "'reward'" in line]
    assert len(rows) == 2 and all("'failed': 0.0" in row for row in rows)


@pytest.mark.parametrize("code", readme_examples("postgres"))
def test_readme_postgres_example_runs(code: str) -> None:
    if not os.environ.get("GRSE_POSTGRES_DSN"):
        pytest.skip("GRSE_POSTGRES_DSN not set (.ci/run starts a PostgreSQL server and sets it)")
    assert "AsyncPostgresSaver train-" in run_example(code, {})


def test_readme_has_a_section_per_integration() -> None:
    text = README.read_text(encoding="utf-8")
    for section in ("## LangGraph Studio", "## LangSmith", "## PostgreSQL checkpoints"):
        assert section in text
    for tag in ("studio", "langsmith", "postgres"):
        assert readme_examples(tag), tag
