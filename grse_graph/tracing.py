"""Trace ids for team executions, so a rollout or a prediction can be found in LangSmith.

Every team execution is started with a run id chosen here (LangChain's `run_id` config key),
and its trace id is the id of the trace it nests in: the caller's trace when there is one (a
training run, a `langsmith.evaluate` experiment, an evaluation question), otherwise its own run
id (a root run is its own trace). The caller's trace is found, in order, from the LangSmith
tracer among the parent's callbacks, from the parent's `grse_trace_id` metadata, and from the
LangSmith run tree of the current context. With tracing off the ids are still recorded: they are
what a later traced run of the same code would be filed under.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ConfigDict

TRACE_METADATA_KEY = "grse_trace_id"
"""Run metadata naming the trace a run belongs to; inherited by nested runs through `parent`."""


class TraceRef(BaseModel):
    """Where one execution is in LangSmith: its own run id and the id of its trace."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    run_id: str


def _tracer_trace_id(callbacks: Any) -> str | None:
    parent_run_id = getattr(callbacks, "parent_run_id", None)
    if parent_run_id is None:
        return None
    for handler in getattr(callbacks, "handlers", ()) or ():
        run_map = getattr(handler, "run_map", None)
        if not isinstance(run_map, dict):
            continue
        run = run_map.get(str(parent_run_id))
        trace_id = getattr(run, "trace_id", None)
        if trace_id is not None:
            return str(trace_id)
    return None


def _context_trace_id() -> str | None:
    from langsmith.run_helpers import get_current_run_tree

    tree = get_current_run_tree()
    return str(tree.trace_id) if tree is not None and tree.trace_id is not None else None


def current_trace_id(parent: RunnableConfig | None = None) -> str | None:
    """The trace a run started now would nest in, or None for a root run."""
    if parent is not None:
        found = _tracer_trace_id(parent.get("callbacks"))
        if found is not None:
            return found
        metadata = parent.get("metadata") or {}
        if metadata.get(TRACE_METADATA_KEY):
            return str(metadata[TRACE_METADATA_KEY])
    return _context_trace_id()


def traced_config(
    config: RunnableConfig, parent: RunnableConfig | None = None
) -> tuple[RunnableConfig, TraceRef]:
    """`config` with a fresh run id, nested under `parent` (its callbacks only: never its
    checkpointer or other configurable values), and the `TraceRef` that run will have."""
    run_id = uuid.uuid4()
    ref = TraceRef(trace_id=current_trace_id(parent) or str(run_id), run_id=str(run_id))
    traced: RunnableConfig = {
        **config,
        "run_id": run_id,
        "metadata": {**(config.get("metadata") or {}), TRACE_METADATA_KEY: ref.trace_id},
    }
    if parent is not None and parent.get("callbacks") is not None:
        traced["callbacks"] = parent["callbacks"]
    return traced, ref


def root_run_config(config: RunnableConfig) -> tuple[RunnableConfig, TraceRef]:
    """`config` for a run that starts its own trace (a training run): run id = trace id, also in
    the metadata so nested runs name it even where the tracer cannot be seen."""
    run_id = uuid.uuid4()
    ref = TraceRef(trace_id=str(run_id), run_id=str(run_id))
    return {
        **config,
        "run_id": run_id,
        "metadata": {**(config.get("metadata") or {}), TRACE_METADATA_KEY: ref.trace_id},
    }, ref
