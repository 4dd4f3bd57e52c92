"""The training graph exported for `langgraph dev`: importable offline, no checkpointer."""

from __future__ import annotations

import importlib


def test_graphs_training_exports_the_compiled_loop_without_a_checkpointer() -> None:
    module = importlib.import_module("graphs.training")
    graph = module.graph
    assert graph.checkpointer is None
    nodes = set(graph.get_graph().nodes)
    assert {
        "sample_batch",
        "rollout",
        "critic",
        "aggregate",
        "evolve",
        "validate",
        "commit",
    } <= nodes
    assert graph.config["recursion_limit"] > 9 * module._config.iterations
