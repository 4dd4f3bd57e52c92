"""The training loop for `langgraph dev` / LangGraph Studio (see `grse_graph.studio`).

Configure each assistant through its context (task, data, every role's endpoint, the
`TrainConfig` fields under `train`, `review`, `runs_dir`); start a thread with the input `{}`.
One run folder per thread; progress on the custom stream; review edits arrive as interrupts.
Importing this module reads nothing and contacts no server.
"""

from grse_graph.studio import build_training_studio_graph

graph = build_training_studio_graph()
