"""The Python examples of the README and of docs/ run as written (unit ones always, engine ones
on the engine), each page's links lead somewhere, and the README keeps its required shape."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from grse_graph.methods.base import CreditMethod
from tests.fakeserver import SCRIPTED_JUDGES, FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
"""Every page whose tagged examples are run: the README and the docs pages."""
MARKER = "<!-- readme-test: "
BLOCK = re.compile(r"<!-- readme-test: (\w+) -->\s*```python\n(.*?)```", re.DOTALL)
EXAMPLES = {
    "unit": 2,
    "engine": 1,
    "fake": 1,
    "api": 2,
    "docs": 1,
    "studio": 1,
    "langsmith": 1,
    "postgres": 1,
}
"""How many examples of each kind the pages hold together: an example that loses its tag when
it moves between pages would otherwise silently stop being run."""


def page_examples(page: Path, kind: str) -> list[str]:
    """The Python blocks of `page` tagged with `<!-- readme-test: KIND -->`."""
    return [code for tag, code in BLOCK.findall(page.read_text(encoding="utf-8")) if tag == kind]


def readme_examples(kind: str) -> list[Any]:
    """Every page's examples of `kind`, one test parameter each, named after page and position."""
    return [
        pytest.param(code, id=f"{page.name}-{number}")
        for page in PAGES
        for number, code in enumerate(page_examples(page, kind), 1)
    ]


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


@pytest.mark.parametrize("code", readme_examples("fake"))
def test_docs_example_for_any_server_runs_against_the_fake_server(code: str) -> None:
    # An example written for whatever server GRSE_ACTOR_BASE_URL names; its agents' path to
    # the engine is an integration test of its own (tests/integration/test_own_agents_engine.py).
    with FakeOpenAIServer() as server:
        out = run_example(code, server.env())
    assert '"prompt_tokens"' in out


def readme_api_example() -> str:
    """The Python API example of the README's "Python API" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    (code,) = [code for tag, code in BLOCK.findall(section) if tag == "api"]
    return code


@pytest.mark.engine
def test_readme_python_api_example_runs_on_the_engine(small_engine_url: str) -> None:
    # train(), evaluate() and export_pack() as a reader runs them, the team on the embedded
    # small model; the critic and the optimizer are the scripted server, as in the piped demo
    # (the small model runs GRSE's critique to any cap a test can afford).
    with FakeOpenAIServer() as scripted:
        env = scripted.env(roles=SCRIPTED_JUDGES)
        env |= {"GRSE_ACTOR_BASE_URL": small_engine_url, "GRSE_ACTOR_MAX_TOKENS": "64"}
        out = run_example(readme_api_example(), env | {"LANGSMITH_TRACING": "false"})
    assert "iteration 1: validation" in out and "pack " in out
    assert re.search(r"^test reward \d\.\d\d on 2 questions$", out, re.MULTILINE), out


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


def test_readme_python_api_trains_evaluates_and_ships_from_grse_graph_alone() -> None:
    code = readme_api_example()
    assert re.findall(r"^from (grse_graph\S*) import", code, re.MULTILINE) == ["grse_graph"]
    calls = [code.index(f"{name}(") for name in ("train", "evaluate", "export_pack")]
    assert calls == sorted(calls)
    methods = page_examples(ROOT / "docs" / "METHODS.md", "api")
    assert any("SilentMethod" in code for code in methods)


@pytest.mark.parametrize("code", readme_examples("docs"))
def test_docs_example_runs(code: str) -> None:
    # A page's own example: it asserts or prints what it shows; it must run as written.
    assert run_example(code, {}).strip()


def test_the_interface_listed_in_methods_md_is_credit_method_s() -> None:
    text = (ROOT / "docs" / "METHODS.md").read_text(encoding="utf-8")
    section = text.split("## The interface", 1)[1].split("\n## ", 1)[0]
    (listing,) = re.findall(r"```text\n(.*?)```", section, re.DOTALL)
    listed = set(re.findall(r"^    (?:async def |def )?(\w+)[:(]", listing, re.MULTILINE))
    protocol = set(CreditMethod.__annotations__) | {
        name for name, value in vars(CreditMethod).items() if callable(value) and name[0] != "_"
    }
    assert listed == protocol, (sorted(listed - protocol), sorted(protocol - listed))


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


def test_each_integration_has_a_section_with_its_example() -> None:
    readme = README.read_text(encoding="utf-8")
    assert "## LangGraph Studio, LangSmith and PostgreSQL" in readme
    page = ROOT / "docs" / "INTEGRATIONS.md"
    text = page.read_text(encoding="utf-8")
    for section in ("## LangGraph Studio", "## LangSmith", "## PostgreSQL checkpoints"):
        assert section in text
    for tag in ("studio", "langsmith", "postgres"):
        assert page_examples(page, tag), tag


# -- every example is still run, and the pages' links lead somewhere ---------------------------


def test_every_tagged_example_is_a_python_block_of_a_known_kind() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        # A marker not followed by a Python block would match nothing, and its example not run.
        assert text.count(MARKER) == len(BLOCK.findall(text)), page.name
    counts = {kind: len(readme_examples(kind)) for kind in EXAMPLES}
    tags = {tag for page in PAGES for tag, _ in BLOCK.findall(page.read_text(encoding="utf-8"))}
    assert counts == EXAMPLES and tags == set(EXAMPLES)


def test_readme_has_at_most_300_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes for `page`'s headings (code blocks hold no headings)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6} +(.+?) *$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def local_links(page: Path) -> list[str]:
    """`page`'s links to files of this repository (not web addresses), code blocks left out."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [link for link in LINK.findall(text) if not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_links_lead_to_files_and_headings_that_exist(page: Path) -> None:
    for link in local_links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link}"
        if anchor:
            assert anchor in anchors(target), f"{page.name}: {link}"
