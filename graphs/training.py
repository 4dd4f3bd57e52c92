"""The GRSE training loop on the bundled demo task, for `langgraph dev` / LangGraph Studio.

Importing this module starts nothing and contacts no server. Model endpoints come from the grse
configuration in the environment (`GRSE_ACTOR_BASE_URL`, `GRSE_CRITIC_BASE_URL`,
`GRSE_OPTIMIZER_BASE_URL`, ...; see `grse_graph.llm.config.load_config`); a graph server cannot
start the embedded engine, so point the roles at a running OpenAI-compatible endpoint (the URL
`grse serve local` prints, or a vLLM server). `GRSE_TRAIN_TASK` (default `demo`) and
`GRSE_TRAIN_DATA` choose the task, `GRSE_RUN_DIR` (default `runs/langgraph-dev`) the run folder
its artifacts are written to: one training run per run folder. Start a run with the input `{}`.

The graph is compiled without a checkpointer (the LangGraph server adds its own); the CLI
(`grse train`) compiles the same graph with SQLite checkpoints in the run folder.
"""

from __future__ import annotations

import os

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.roles import ModelRoles
from grse_graph.tasks.registry import load_task
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps, compile_training_graph
from grse_graph.training.run_folder import RunFolder

_config = TrainConfig(
    task=os.environ.get("GRSE_TRAIN_TASK", "demo"), data=os.environ.get("GRSE_TRAIN_DATA")
)
_ledger = UsageLedger()
_deps = TrainingDeps(
    task=load_task(_config.task, data=_config.data),
    provider=ModelRoles(load_config(), _ledger),
    config=_config,
    run=RunFolder(os.environ.get("GRSE_RUN_DIR", "runs/langgraph-dev")),
    usage=lambda: _ledger.report().model_dump(mode="json"),
)

graph = compile_training_graph(_deps)
