"""Benchmark the embedded engine through the project's one client path.

Prints prompt and generation throughput (from the engine's own timing log), the latency of a
~1k-token prompt the first time and again with the same prefix, and the total time of four
requests sharing a prefix sent one by one versus concurrently.

    python benchmarks/engine.py --model small
    python benchmarks/engine.py --model default --threads 2
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import EngineSettings, default_cache_dir, load_config
from grse_graph.llm.engine import LocalEngine
from grse_graph.llm.roles import ModelRoles


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


def run(engine: LocalEngine, generate_tokens: int) -> None:
    """Run the measurements against a started engine and print them."""
    roles = ModelRoles(load_config(env={}), UsageLedger(), engine_url=engine.base_url)
    timed(roles, [HumanMessage(content="Hi")], 4)  # warm-up: first-call allocations

    before = engine.prompt_eval_stats()
    timed(roles, prompt("lighthouse", "Summarise the archive."), generate_tokens)
    throughput = engine.prompt_eval_stats() - before
    prompt_rate = throughput.evaluated_prompt_tokens / (throughput.prompt_eval_ms / 1000)
    generation_rate = throughput.generated_tokens / (throughput.generation_ms / 1000)
    print(
        f"prompt tokens/s:     {prompt_rate:8.1f}  "
        f"({throughput.evaluated_prompt_tokens} tokens in {throughput.prompt_eval_ms:.0f} ms)"
    )
    print(
        f"generated tokens/s:  {generation_rate:8.1f}  "
        f"({throughput.generated_tokens} tokens in {throughput.generation_ms:.0f} ms)"
    )

    before = engine.prompt_eval_stats()
    first = timed(roles, prompt("harbour", "Which room holds item 7?"), 8)
    middle = engine.prompt_eval_stats()
    repeated = timed(roles, prompt("harbour", "Which room holds item 14?"), 8)
    after = engine.prompt_eval_stats()
    print(
        f"1k-prefix latency:   first {first:6.2f} s "
        f"({(middle - before).evaluated_prompt_tokens} prompt tokens evaluated), "
        f"repeated {repeated:6.2f} s ({(after - middle).evaluated_prompt_tokens} evaluated, "
        f"{(after - middle).reused_prompt_tokens} reused)"
    )

    questions = [f"Which room holds item {7 * k}?" for k in (3, 4, 5, 6)]
    sequential = sum(timed(roles, prompt("orchard", q), 64) for q in questions)
    together = asyncio.run(concurrent(roles, [prompt("meadow", q) for q in questions], 64))
    print(
        f"4 requests x 64 tokens, shared 1k prefix: one by one {sequential:6.2f} s, "
        f"concurrent {together:6.2f} s"
    )
    usage = roles.ledger.report().role("actor")
    print(
        f"ledger: {usage.calls} calls, {usage.prompt_tokens} prompt tokens, "
        f"{usage.completion_tokens} completion tokens, {usage.cached_prompt_tokens} reported cached"
    )
    roles.close()


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small", help="default | small | medium | path.gguf")
    parser.add_argument("--engine", default="auto", help="auto | llama-server | llama-cpp-python")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--generate", type=int, default=64, help="tokens for the throughput run")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    settings = EngineSettings(
        model=args.model,
        engine=args.engine,
        threads=args.threads,
        n_ctx=4096,
        cache_dir=args.cache_dir or default_cache_dir(),
    )
    start = time.perf_counter()
    with LocalEngine(settings) as engine:
        print(
            f"engine {engine.engine_name}, model {engine.model_path.name}, "
            f"threads {settings.resolved_threads()}, started in {time.perf_counter() - start:.1f} s"
        )
        run(engine, args.generate)


if __name__ == "__main__":
    main()
