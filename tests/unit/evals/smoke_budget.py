"""What every table's smoke size asks of the model: each table run at `--smoke` (on the
invented fixtures shipped in the package) against the fake OpenAI-compatible server (no
engine), in the smoke test's order and one results folder (so later tables reuse earlier
runs, as on the engine), with the calls and the requested `max_tokens` per role, per table and
per run.

A count, not a timer: the embedded 0.5B engine's time is roughly the requested completion
tokens (about 80 tokens/s) plus the prompts, so these counts are what a smoke size costs.

    python -m tests.unit.evals.smoke_budget          # prints the tally of every table
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakeserver import ROLES, FakeOpenAIServer

ORDER = ("table4_5", "table1", "table2", "table3", "table6", "table9", "table10", "table11")
"""The smoke test's order: later tables reuse the runs of earlier ones."""


@dataclass
class Tally:
    """Calls (choices: `n` counts each) and requested max_tokens per role."""

    calls: Counter[str] = field(default_factory=Counter)
    max_tokens: Counter[str] = field(default_factory=Counter)
    prompt_tokens: Counter[str] = field(default_factory=Counter)
    """Estimated (4 characters a token) prompt tokens: a request with `n` choices is one."""

    def add(self, role: str, n: int, max_tokens: int, prompt_tokens: int = 0) -> None:
        self.calls[role] += n
        self.max_tokens[role] += n * max_tokens
        self.prompt_tokens[role] += prompt_tokens

    def __iadd__(self, other: Tally) -> Tally:
        self.calls += other.calls
        self.max_tokens += other.max_tokens
        self.prompt_tokens += other.prompt_tokens
        return self

    def total_calls(self) -> int:
        return sum(self.calls.values())

    def line(self) -> str:
        return ", ".join(
            f"{role} {self.calls[role]} ({self.max_tokens[role]} max + "
            f"~{self.prompt_tokens[role]} prompt tok)"
            for role in ROLES
            if self.calls[role]
        )


class CountingServer(FakeOpenAIServer):
    """The fake server, also keeping every request's role, `n` and `max_tokens`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_requests=100_000, lifetime_s=3600.0, **kwargs)
        self.requests: list[tuple[str, int, int, int]] = []

    def _handle(self, handler: Any, body: Mapping[str, Any], raw: bytes) -> None:
        role = handler.path.strip("/").split("/")[0]
        limit = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        prompt = len(json.dumps(body.get("messages", []))) // 4
        self.requests.append((role, int(body.get("n") or 1), int(limit), prompt))
        super()._handle(handler, body, raw)

    def tally(self, start: int = 0, end: int | None = None) -> Tally:
        tally = Tally()
        for role, n, limit, prompt in self.requests[start:end]:
            tally.add(role, n, limit, prompt)
        return tally


@dataclass
class TableBudget:
    """One table's new calls (runs reused from earlier tables cost nothing) and its runs'."""

    table: str
    tally: Tally
    runs: dict[str, Tally]


@contextmanager
def _environment(server: FakeOpenAIServer) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(server.env(timeout_s=30.0, max_retries=0))
    os.environ["LANGSMITH_TRACING"] = "false"
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def smoke_budgets(out: Path, tables: tuple[str, ...] = ORDER) -> list[TableBudget]:
    """Run `tables` at the smoke size on the fixtures against a counting fake server."""
    from grse_graph.reproduce import scheduler
    from grse_graph.reproduce.script import main

    budgets: list[TableBudget] = []
    server = CountingServer()
    with server, _environment(server):
        runs: dict[str, Tally] = {}
        original = scheduler.make_run

        def counted(spec: Any, *args: Any, **kwargs: Any) -> Any:
            start = len(server.requests)
            try:
                return original(spec, *args, **kwargs)
            finally:
                runs[spec.run_id] = server.tally(start)

        scheduler.make_run = counted
        try:
            for table in tables:
                runs.clear()
                start = len(server.requests)
                args = ["--smoke", "--commit", "budget", "--out", str(out)]
                with contextlib.redirect_stdout(io.StringIO()):
                    status = main(table, args, env={})  # --smoke: the package's fixtures
                if status != 0:
                    raise RuntimeError(f"{table} smoke failed with status {status}")
                budgets.append(TableBudget(table, server.tally(start), dict(runs)))
        finally:
            scheduler.make_run = original
    return budgets


def report(budgets: list[TableBudget]) -> str:
    lines = []
    total = Tally()
    for budget in budgets:
        total += budget.tally
        lines.append(f"{budget.table}: {budget.tally.total_calls()} calls: {budget.tally.line()}")
        for run_id, tally in budget.runs.items():
            lines.append(f"    {run_id}: {tally.total_calls()} calls: {tally.line()}")
    lines.append(f"all tables: {total.total_calls()} calls: {total.line()}")
    return "\n".join(lines)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="smoke-budget-") as folder:
        print(report(smoke_budgets(Path(folder))), file=sys.stdout)
