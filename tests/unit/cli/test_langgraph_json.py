"""What a fresh `langgraph dev` serves comes from `langgraph.json` alone: no `.langgraph_api/`
(the pickled threads, runs and checkpoints of some earlier session) ships with the repository,
and every graph the config names loads, one graph per module under `graphs/`.

Starting `langgraph dev` itself is left to `tests/integration/test_langgraph_dev.py`: a server
process, a port and its own state folder are more than a unit test should take."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph

REPO = Path(__file__).resolve().parents[3]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    inside = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        text=True,
        check=False,
    )
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        pytest.skip("not a git checkout")
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )


def test_no_langgraph_dev_state_is_tracked_or_trackable() -> None:
    tracked = _git("ls-files", "--", ".langgraph_api")
    assert tracked.returncode == 0, tracked.stderr
    assert tracked.stdout == ""
    ignored = _git("check-ignore", "--quiet", "--no-index", ".langgraph_api/store.pckl")
    assert ignored.returncode == 0, ".langgraph_api/ is not in .gitignore"


def _load_graph(reference: str, graph_id: str) -> Any:
    """The object `./path.py:attribute` names, imported the way `langgraph dev` does (by file)."""
    file, _, attribute = reference.partition(":")
    spec = importlib.util.spec_from_file_location(f"langgraph_json_{graph_id}", REPO / file)
    assert spec is not None and spec.loader is not None, reference
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attribute)


def test_langgraph_json_graphs_each_load_and_nothing_else_is_registered() -> None:
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    graphs: dict[str, str] = config["graphs"]
    assert set(graphs) == {"team", "training"}
    loaded = {graph_id: _load_graph(reference, graph_id) for graph_id, reference in graphs.items()}
    assert all(isinstance(graph, CompiledStateGraph) for graph in loaded.values())
    assert len({id(graph) for graph in loaded.values()}) == len(loaded)
    # Every graph module is registered, and nothing but graph modules is.
    referenced = {(REPO / ref.partition(":")[0]).resolve() for ref in graphs.values()}
    on_disk = {path.resolve() for path in (REPO / "graphs").glob("*.py")}
    assert referenced == on_disk
    assert not (set(config) - {"python_version", "dependencies", "graphs", "env"})
