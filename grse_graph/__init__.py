"""grse-graph: Group-Relative Skill Evolution for LangGraph agent teams.

`train`, `evaluate`, `load_pack` and `export_pack` (`grse_graph.api`) are the one-call Python API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from grse_graph.api import (
        IterationScores,
        TrainResult,
        evaluate,
        export_pack,
        load_pack,
        train,
    )

_API = frozenset(
    {"IterationScores", "TrainResult", "evaluate", "export_pack", "load_pack", "train"}
)

__all__ = [
    "IterationScores",
    "TrainResult",
    "__version__",
    "evaluate",
    "export_pack",
    "load_pack",
    "train",
]


def __getattr__(name: str) -> Any:
    # Imported on first use: `import grse_graph` (the CLI's `--version`, the skills package's
    # manifest) stays free of the training stack, and no import cycle runs through here.
    if name in _API:
        from grse_graph import api

        return getattr(api, name)
    raise AttributeError(f"module 'grse_graph' has no attribute {name!r}")
