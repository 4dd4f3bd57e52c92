"""The training loop as a LangGraph `StateGraph`, for every credit method.

    setup -> sample_batch -(Send per (question, g))-> rollout -> groups
          -(Send per credit unit)-> critic -> probe -> aggregate -> evolve -> review
          -(Send per (variant, question, h))-> validate -> commit -> sample_batch | report -> END

The method (`TrainConfig.method`, looked up in `TrainingDeps.methods`) decides its starting
state, each round's questions, the team of each unit, G, the credit units, the credit call, the
round update (plan, state, its own libraries or the shared operators), the commit policy (the
per-agent gate, or accept), the utility rule and the number of rounds; this module only wires
the node units of `grse_graph.training.nodes`. The state stays small and JSON-serialisable:
ids, scores, library paths and content hashes. Rollouts, credit records and every other
artifact live in the run folder, keyed by a deterministic unit id; a unit found there is
reused, so a resumed run never pays for a finished rollout, credit call or validation
execution twice (LangGraph's pending writes already cover the Send tasks that finished in the
superstep that failed; the run folder also covers work whose checkpoint was never written).
The first rollout of a group to start makes the first agent's first call once with n=G for all
its siblings (`GroupOpenings`, stored in openings.jsonl).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from .config import TrainConfig
from .context import TrainingContext, TrainingDeps
from .nodes import (
    CreditStage,
    EvolutionStage,
    ProbeStage,
    RolloutStage,
    SetupStage,
    ValidationStage,
)
from .state import TrainingState


def recursion_limit(config: TrainConfig) -> int:
    """Supersteps the loop needs: 10 per round plus setup and report, with slack (and room for
    one round beyond the configured iterations, such as SkillMAS's final measurement)."""
    return 13 * (config.iterations + 1) + 10


def build_training_graph(deps: TrainingDeps) -> StateGraph:
    """The training loop as an uncompiled `StateGraph` over `TrainingState`.

    Compile it with a checkpointer for resumable runs (the CLI uses SQLite in the run folder)
    or without one for `langgraph dev`; run it with `training_run_config(config)` so the
    recursion limit and the concurrency bound are set.
    """
    ctx = TrainingContext.of(deps)
    setup, rollouts, credit = SetupStage(ctx), RolloutStage(ctx), CreditStage(ctx)
    evolution, validation = EvolutionStage(ctx), ValidationStage(ctx)
    probe = ProbeStage(ctx)

    retry = RetryPolicy(max_attempts=deps.config.max_attempts)
    builder = StateGraph(TrainingState)
    builder.add_node("setup", setup.setup)
    builder.add_node("sample_batch", setup.sample_batch)
    builder.add_node("rollout", rollouts.rollout, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("groups", credit.groups)
    builder.add_node("critic", credit.credit, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("probe", probe.probe, retry_policy=retry)
    builder.add_node("aggregate", evolution.plan, retry_policy=retry)
    builder.add_node("evolve", evolution.evolve, retry_policy=retry)
    builder.add_node("review", evolution.review)
    builder.add_node("validate", validation.validate, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("commit", validation.commit)
    builder.add_node("report", setup.report)
    builder.set_entry_point("setup")
    builder.add_edge("setup", "sample_batch")
    builder.add_conditional_edges("sample_batch", rollouts.send, ["rollout"])
    builder.add_edge("rollout", "groups")
    builder.add_conditional_edges("groups", credit.send, ["critic", "probe"])
    builder.add_edge("critic", "probe")
    builder.add_edge("probe", "aggregate")
    builder.add_edge("aggregate", "evolve")
    builder.add_edge("evolve", "review")
    builder.add_conditional_edges("review", validation.send, ["validate", "commit"])
    builder.add_edge("validate", "commit")
    builder.add_conditional_edges("commit", setup.next_step, ["sample_batch", "report"])
    builder.add_edge("report", END)
    return builder


def training_run_config(config: TrainConfig, thread_id: str = "train") -> RunnableConfig:
    """The LangGraph run config: thread id, recursion limit and the concurrency bound."""
    return {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": recursion_limit(config),
        "max_concurrency": config.concurrency,
    }


def compile_training_graph(deps: TrainingDeps, checkpointer: Any = None) -> CompiledStateGraph:
    """Compile the training graph (with a checkpointer for resumable CLI runs, or without one
    for `langgraph dev`), bounded by the configured concurrency and recursion limit."""
    compiled = build_training_graph(deps).compile(checkpointer=checkpointer)
    limits = training_run_config(deps.config)
    del limits["configurable"]
    return compiled.with_config(limits)


__all__ = [
    "TrainingDeps",
    "TrainingState",
    "build_training_graph",
    "compile_training_graph",
    "recursion_limit",
    "training_run_config",
]
