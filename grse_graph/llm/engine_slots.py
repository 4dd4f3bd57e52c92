"""The embedded engine with prefix slots: what the roles of a session run on.

llama-server keeps ``n_parallel`` slots in one process, each with its own prompt cache, and
picks the slot whose cached prompt is most similar. llama-cpp-python has one cache per process,
so `EngineSlots` starts ``n_parallel`` llama-cpp-python processes on the same model file (the
weights are memory-mapped, so their pages are shared) and `slot_routing` sends each request to
the process that holds its prefix. Either way the roles get one base URL, and `slot_urls` maps
it to every slot's URL for `ModelRoles`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from grse_graph.errors import EngineError
from grse_graph.llm.accounting import PromptEvalStats
from grse_graph.llm.config import EngineSettings
from grse_graph.llm.engine import ConcreteEngine, LocalEngine
from grse_graph.llm.lifecycle import Started


def slot_log_path(first: Path, slot: int) -> Path:
    """Where slot ``slot`` (from 1) logs, beside the first slot's log."""
    return first.with_name(f"{first.stem}.slot{slot}{first.suffix}")


class EngineSlots(Started):
    """One embedded engine (llama-server) or one llama-cpp-python process per slot; a context
    manager. Exposes what sessions read from `LocalEngine`: `base_url` (the first slot's),
    `engine_name`, `model_path`, `log_path`, `running` and `prompt_eval_stats` (summed)."""

    def __init__(
        self,
        settings: EngineSettings,
        *,
        log_path: Path | None = None,
        which: Callable[[str], str | None] = shutil.which,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self._log_path = log_path
        self._which = which
        self._progress = progress
        self.engines: list[LocalEngine] = []

    def _engine(self, settings: EngineSettings, log_path: Path | None) -> LocalEngine:
        if self._progress is None:
            return LocalEngine(settings, log_path=log_path, which=self._which)
        return LocalEngine(settings, log_path=log_path, which=self._which, progress=self._progress)

    def start(self) -> EngineSlots:
        """Start every slot's engine and wait until each answers (all are stopped if one
        fails)."""
        if self.engines:
            raise EngineError("the engine slots are already started")
        first = self._engine(self.settings, self._log_path)
        self.engines.append(first)
        try:
            first.launch()
            if first.engine_name == "llama-cpp-python":
                # Further slots need ports of their own, so a configured port stays the first's.
                others = self.settings.model_copy(update={"port": 0})
                for slot in range(1, self.settings.n_parallel):
                    engine = self._engine(others, slot_log_path(first.log_path, slot))
                    self.engines.append(engine)
                    engine.launch()
            for engine in self.engines:
                engine.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def first(self) -> LocalEngine:
        """The first slot's engine (the one whose URL roles are given)."""
        if not self.engines:
            raise EngineError("the local engine is not started")
        return self.engines[0]

    @property
    def base_url(self) -> str:
        """The first slot's OpenAI-compatible base URL."""
        return self.first.base_url

    @property
    def slot_urls(self) -> tuple[str, ...]:
        """Every slot's base URL (one for llama-server, whose slots share a process)."""
        return tuple(engine.base_url for engine in self.engines)

    @property
    def engine_name(self) -> ConcreteEngine:
        """``llama-server`` or ``llama-cpp-python``."""
        return self.first.engine_name

    @property
    def model_path(self) -> Path:
        """The GGUF file being served."""
        return self.first.model_path

    @property
    def log_path(self) -> Path:
        """The first slot's log (the others log beside it, see `slot_log_path`)."""
        return self.first.log_path

    @property
    def running(self) -> bool:
        """True while any slot's process is alive."""
        return any(engine.running for engine in self.engines)

    def prompt_eval_stats(self) -> PromptEvalStats:
        """Prompt tokens evaluated and reused so far, summed over the slots."""
        total = PromptEvalStats()
        for engine in self.engines:
            total = total + engine.prompt_eval_stats()
        return total

    def stop(self) -> None:
        """Stop every slot's engine. Safe to call twice."""
        for engine in self.engines:
            engine.stop()
