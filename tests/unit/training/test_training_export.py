"""The training graph exported for `langgraph dev`: importable offline, no checkpointer."""

from __future__ import annotations

import importlib


def test_graphs_training_exports_the_studio_loop_without_a_checkpointer() -> None:
    # The loop itself runs as a subgraph of the `train` node, built per thread from the
    # assistant's context (tests/unit/cli/test_studio_graphs.py runs it).
    module = importlib.import_module("graphs.training")
    graph = module.graph
    assert graph.checkpointer is None
    assert "train" in set(graph.get_graph().nodes)
    assert {"train", "review", "runs_dir"} <= set(graph.get_context_jsonschema()["properties"])
