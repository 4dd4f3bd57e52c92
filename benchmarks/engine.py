"""Benchmark the embedded engine(s) through the project's one client path.

Measures prompt and generation throughput (from the engine's own timing log), the latency of a
~1k-token prompt the first time and again with the same prefix, the total time of four requests
sharing a prefix sent one by one versus concurrently, and one ``n=4`` request (four samples of
one prompt). Prints one table with a column per engine.

    python benchmarks/engine.py --model small
    python benchmarks/engine.py --model default --threads 2 --engine llama-server
    python benchmarks/engine.py --model default --threads 2 --compare   # both engines

With ``--compare`` an engine that cannot start here (no llama-server binary, xllamacpp not
installed) is skipped with the reason printed.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import get_args

import httpx
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from grse_graph.errors import EngineError
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import EngineSettings, default_cache_dir, load_config
from grse_graph.llm.engine import ConcreteEngine, LocalEngine, choose_engine
from grse_graph.llm.roles import ModelRoles

SAMPLES = 4


class EngineMeasurements(BaseModel):
    """One engine's numbers."""

    engine: str
    startup_s: float
    prompt_tokens_per_s: float
    generated_tokens_per_s: float
    prefix_first_s: float
    prefix_first_evaluated: int
    prefix_repeated_s: float
    prefix_repeated_evaluated: int
    prefix_repeated_reused: int
    shared_sequential_s: float
    shared_concurrent_s: float
    n_request_s: float
    n_request_choices: int
    n_request_distinct: int
    ledger_cached_tokens: int


def long_prefix(topic: str, sentences: int = 60) -> str:
    """About 1,000 tokens of deterministic text about ``topic``."""
    return " ".join(
        f"Fact {i} about {topic}: the {topic} archive lists item {i * 7} "
        f"as stored in room {i % 13}."
        for i in range(sentences)
    )


def prompt(topic: str, question: str) -> list[BaseMessage]:
    """A long shared system prefix plus a short question."""
    return [SystemMessage(content=long_prefix(topic)), HumanMessage(content=question)]


def timed(roles: ModelRoles, messages: list[BaseMessage], max_tokens: int) -> float:
    """Seconds for one call."""
    start = time.perf_counter()
    roles.chat("actor", max_tokens=max_tokens).invoke(messages)
    return time.perf_counter() - start


async def concurrent(roles: ModelRoles, batch: list[list[BaseMessage]], max_tokens: int) -> float:
    """Seconds for a batch sent at once."""
    model = roles.chat("actor", max_tokens=max_tokens)
    start = time.perf_counter()
    await asyncio.gather(*(model.ainvoke(messages) for messages in batch))
    return time.perf_counter() - start


def n_request(engine: LocalEngine, n: int, max_tokens: int) -> tuple[float, list[str]]:
    """Seconds and choices of one request asking for ``n`` samples (sent as is: the chat
    model wrapper would not show what the engine did with ``n``)."""
    body = {
        "model": engine.model_alias,
        "messages": [
            {"role": "system", "content": long_prefix("quarry")},
            {"role": "user", "content": "Name one item and its room."},
        ],
        "n": n,
        "max_tokens": max_tokens,
        "temperature": 1.0,
    }
    start = time.perf_counter()
    reply = httpx.post(f"{engine.base_url}/chat/completions", json=body, timeout=600)
    reply.raise_for_status()
    seconds = time.perf_counter() - start
    return seconds, [choice["message"]["content"] or "" for choice in reply.json()["choices"]]


def rate(tokens: int, milliseconds: float) -> float:
    """Tokens per second; NaN (printed as nan) when the log showed no timing for the run."""
    return tokens / (milliseconds / 1e3) if milliseconds > 0 else float("nan")


def measure(engine: LocalEngine, generate_tokens: int, startup_s: float) -> EngineMeasurements:
    """Run the measurements against a started engine."""
    roles = ModelRoles(load_config(env={}), UsageLedger(), engine_url=engine.base_url)
    timed(roles, [HumanMessage(content="Hi")], 4)  # warm-up: first-call allocations

    before = engine.prompt_eval_stats()
    timed(roles, prompt("lighthouse", "Summarise the archive."), generate_tokens)
    throughput = engine.prompt_eval_stats() - before

    before = engine.prompt_eval_stats()
    first = timed(roles, prompt("harbour", "Which room holds item 7?"), 8)
    middle = engine.prompt_eval_stats()
    repeated = timed(roles, prompt("harbour", "Which room holds item 14?"), 8)
    after = engine.prompt_eval_stats()

    questions = [f"Which room holds item {7 * k}?" for k in (3, 4, 5, 6)]
    sequential = sum(timed(roles, prompt("orchard", q), 64) for q in questions)
    together = asyncio.run(concurrent(roles, [prompt("meadow", q) for q in questions], 64))
    n_seconds, choices = n_request(engine, SAMPLES, 64)
    usage = roles.ledger.report().role("actor")
    roles.close()
    return EngineMeasurements(
        engine=engine.engine_name,
        startup_s=startup_s,
        prompt_tokens_per_s=rate(throughput.evaluated_prompt_tokens, throughput.prompt_eval_ms),
        generated_tokens_per_s=rate(throughput.generated_tokens, throughput.generation_ms),
        prefix_first_s=first,
        prefix_first_evaluated=(middle - before).evaluated_prompt_tokens,
        prefix_repeated_s=repeated,
        prefix_repeated_evaluated=(after - middle).evaluated_prompt_tokens,
        prefix_repeated_reused=(after - middle).reused_prompt_tokens,
        shared_sequential_s=sequential,
        shared_concurrent_s=together,
        n_request_s=n_seconds,
        n_request_choices=len(choices),
        n_request_distinct=len(set(choices)),
        ledger_cached_tokens=usage.cached_prompt_tokens,
    )


ROWS: list[tuple[str, str]] = [
    ("started in (s)", "{m.startup_s:.1f}"),
    ("prompt tokens/s", "{m.prompt_tokens_per_s:.1f}"),
    ("generated tokens/s", "{m.generated_tokens_per_s:.1f}"),
    ("1k prefix, first (s / evaluated)", "{m.prefix_first_s:.2f} / {m.prefix_first_evaluated}"),
    (
        "1k prefix, repeated (s / eval / reused)",
        "{m.prefix_repeated_s:.2f} / {m.prefix_repeated_evaluated} / {m.prefix_repeated_reused}",
    ),
    ("4 x 64 shared prefix, one by one (s)", "{m.shared_sequential_s:.2f}"),
    ("4 x 64 shared prefix, concurrent (s)", "{m.shared_concurrent_s:.2f}"),
    (
        f"one n={SAMPLES} request (s / choices / distinct)",
        "{m.n_request_s:.2f} / {m.n_request_choices} / {m.n_request_distinct}",
    ),
    ("usage-reported cached prompt tokens", "{m.ledger_cached_tokens}"),
]


def table(results: list[EngineMeasurements]) -> str:
    """One row per measurement, one column per engine."""
    label_width = max(len(label) for label, _ in ROWS)
    cells = [[template.format(m=m) for _, template in ROWS] for m in results]
    widths = [
        max(len(m.engine), *(len(c) for c in column))
        for m, column in zip(results, cells, strict=True)
    ]
    header = " " * label_width + "".join(
        f"  {m.engine:>{w}}" for m, w in zip(results, widths, strict=True)
    )
    lines = [header]
    for row, (label, _) in enumerate(ROWS):
        lines.append(
            f"{label:<{label_width}}"
            + "".join(f"  {column[row]:>{w}}" for column, w in zip(cells, widths, strict=True))
        )
    return "\n".join(lines)


def run_engine(settings: EngineSettings, generate_tokens: int) -> EngineMeasurements:
    """Start one engine, measure it, stop it."""
    start = time.perf_counter()
    with LocalEngine(settings) as engine:
        startup = time.perf_counter() - start
        print(
            f"engine {engine.engine_name}: model {engine.model_path.name}, "
            f"threads {settings.resolved_threads()}, started in {startup:.1f} s; measuring",
            flush=True,
        )
        return measure(engine, generate_tokens, startup)


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small", help="default | small | medium | path.gguf")
    parser.add_argument("--engine", default="auto", help="auto | xllamacpp | llama-server")
    parser.add_argument("--compare", action="store_true", help="run every engine, side by side")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--generate", type=int, default=64, help="tokens for the throughput run")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    base = EngineSettings(
        model=args.model,
        engine=args.engine,
        threads=args.threads,
        n_ctx=4096,
        cache_dir=args.cache_dir or default_cache_dir(),
    )
    engines: list[ConcreteEngine] = list(get_args(ConcreteEngine)) if args.compare else []
    candidates = [base.model_copy(update={"engine": name}) for name in engines] or [base]
    results: list[EngineMeasurements] = []
    for settings in candidates:
        try:
            choose_engine(settings)
        except EngineError as error:
            print(f"skipping {settings.engine}: {error}", flush=True)
            continue
        results.append(run_engine(settings, args.generate))
    if not results:
        raise SystemExit("no engine could run")
    print(table(results))


if __name__ == "__main__":
    main()
