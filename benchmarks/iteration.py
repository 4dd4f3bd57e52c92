"""One GRSE iteration with G=4 and the same loop with G=1, on the same questions and engine.

    python benchmarks/iteration.py [--model default|small|PATH] [--questions 3] [--validation 2]

Prints for each run: wall time; the share of wall time the engine was busy (the model-call
intervals merged, over the wall time); prompt / completion / cached tokens per role; prompt
tokens the engine served from its prefix cache (from the engine log); the critic payload
against its naive size (repeated text inline); and what the group's first-agent n=G call
returned (a server that ignores `n` returns one choice).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from rich.console import Console
from rich.table import Table

from grse_graph.llm import LLMConfig, PromptEvalStats, SamplingSettings, load_config
from grse_graph.llm.provider import ChatModelProvider, RoleName
from grse_graph.methods.grse.method import CritiqueRecord, GrseSettings
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from grse_graph.training.session import load_training_task, open_endpoints


class IntervalRecorder(BaseCallbackHandler):
    """Records the (start, end) wall-clock interval of every model call."""

    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[UUID, float] = {}
        self.intervals: list[tuple[float, float]] = []

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **_: Any
    ) -> None:
        with self._lock:
            self._open[run_id] = time.monotonic()

    def _close(self, run_id: UUID) -> None:
        with self._lock:
            start = self._open.pop(run_id, None)
            if start is not None:
                self.intervals.append((start, time.monotonic()))

    def on_llm_end(self, response: Any, *, run_id: UUID, **_: Any) -> None:
        self._close(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **_: Any) -> None:
        self._close(run_id)

    def busy_seconds(self) -> float:
        """Total length of the union of the recorded intervals."""
        total, end = 0.0, float("-inf")
        for a, b in sorted(self.intervals):
            if a > end:
                total += b - a
                end = b
            elif b > end:
                total += b - end
                end = b
        return total


class RecordingProvider:
    """Wraps a provider so every model it hands out also reports to an `IntervalRecorder`."""

    def __init__(self, inner: ChatModelProvider, recorder: IntervalRecorder) -> None:
        self.inner = inner
        self.recorder = recorder

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        model = self.inner.chat(role, sampling=sampling, max_tokens=max_tokens)
        callbacks = [*list(model.callbacks or []), self.recorder]  # type: ignore[arg-type]
        return model.model_copy(update={"callbacks": callbacks})


def run_once(llm: LLMConfig, config: TrainConfig, folder: Path, console: Console) -> dict[str, Any]:
    """One iteration on a fresh engine; returns the measurements."""
    with open_endpoints(llm, engine_log=folder / "engine.log") as endpoints:
        recorder = IntervalRecorder()
        engine_before = (
            endpoints.engine.prompt_eval_stats() if endpoints.engine is not None else None
        )
        deps = TrainingDeps(
            task=load_training_task(config),
            provider=RecordingProvider(endpoints.roles, recorder),
            config=config,
            run=RunFolder(folder),
            usage=lambda: endpoints.ledger.report().model_dump(mode="json"),
        )
        started = time.monotonic()
        asyncio.run(run_training(deps))
        wall = time.monotonic() - started
        engine_stats: PromptEvalStats | None = None
        if endpoints.engine is not None and engine_before is not None:
            engine_stats = endpoints.engine.prompt_eval_stats() - engine_before
        report = endpoints.ledger.report()
    records = RunFolder(folder).credits(CritiqueRecord).read()
    critiques = [c.result for c in records if c.result is not None]
    openings = RunFolder(folder).openings.read()
    console.print(f"G={deps.credit_method().rollouts_per_question()}: {wall:.0f} s, run {folder}")
    return {
        "wall": wall,
        "busy": recorder.busy_seconds(),
        "usage": report,
        "engine": engine_stats,
        "payload": sum(c.payload_chars for c in critiques),
        "naive": sum(c.naive_payload_chars for c in critiques),
        "openings": (
            f"{sum(len(o.replies) for o in openings)} choices for "
            f"{sum(o.requested for o in openings)} requested in {len(openings)} call(s)"
            if openings
            else "not used"
        ),
    }


def main() -> None:
    """Run both configurations and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--task", default="demo")
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--validation", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    console = Console()
    out = args.out or Path(tempfile.mkdtemp(prefix="grse-iteration-bench-"))
    llm = load_config(overrides={"engine.model": args.model})
    results: dict[int, dict[str, Any]] = {}
    for group_size in (4, 1):
        config = TrainConfig(
            task=args.task,
            iterations=1,
            method=GrseSettings(group_size=group_size),
            batch_size=args.questions,
            validation_size=args.validation,
            concurrency=4,
        )
        results[group_size] = run_once(llm, config, out / f"g{group_size}", console)

    table = Table(title=f"one GRSE iteration, {args.questions} questions, model {args.model}")
    table.add_column("measure")
    for g in results:
        table.add_column(f"G={g}", justify="right")

    def row(label: str, fn: Any) -> None:
        table.add_row(label, *(fn(r) for r in results.values()))

    row("wall time (s)", lambda r: f"{r['wall']:.1f}")
    row("engine busy (s)", lambda r: f"{r['busy']:.1f}")
    row("engine busy share", lambda r: f"{r['busy'] / r['wall']:.0%}")
    for role in ("actor", "critic", "optimizer"):
        row(
            f"{role} calls / prompt / completion / cached",
            lambda r, role=role: (
                f"{r['usage'].role(role).calls} / {r['usage'].role(role).prompt_tokens} / "
                f"{r['usage'].role(role).completion_tokens} / "
                f"{r['usage'].role(role).cached_prompt_tokens}"
            ),
        )
    row(
        "engine prompt tokens computed / from prefix cache",
        lambda r: (
            f"{r['engine'].evaluated_prompt_tokens} / {r['engine'].reused_prompt_tokens}"
            if r["engine"] is not None
            else "n/a (remote endpoint)"
        ),
    )
    row(
        "critic payload / naive (chars)",
        lambda r: (
            f"{r['payload']} / {r['naive']}"
            + (f" ({r['payload'] / r['naive']:.0%})" if r["naive"] else "")
        ),
    )
    row("first-agent n=G calls", lambda r: r["openings"])
    console.print(table)


if __name__ == "__main__":
    main()
