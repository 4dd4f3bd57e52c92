"""The README's Python examples run as written (unit ones always, engine ones on the engine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
