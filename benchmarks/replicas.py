"""Prompt tokens computed and served from cache per group, behind vLLM's router over embedded
engine replicas: ``consistent_hash`` on the affinity key against ``round_robin``, at the same
work (one GRSE iteration on the same questions, seed and settings).

    python benchmarks/replicas.py [--model small] [--questions 4] [--group-size 4] [--replicas 2]

Each policy gets fresh replicas (the cores split among them) and a fresh router. Every request's
usage, as the server reported it (`prompt_tokens`, `prompt_tokens_details.cached_tokens`), is
recorded under the request's affinity key (`grse_graph.llm.affinity`): a training question's
key covers its G rollouts and the critic call over them. Printed per policy: each group's
requests, prompt tokens and the share served from cache; the validation questions together;
calls without a key (the optimizer); and the wall time. Needs the ``serve`` extra
(``vllm-router``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import httpx
from pydantic import BaseModel
from rich.table import Table

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.llm.affinity import question_key
from grse_graph.llm.config import EngineSettings, default_cache_dir
from grse_graph.llm.replicas import LocalReplicas, RouterSettings, find_router
from grse_graph.output import output_console
from grse_graph.tasks.registry import load_task
from grse_graph.training.demo import DEMO_ACTOR_MAX_TOKENS, learning_config
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training

POLICIES = ("consistent_hash", "round_robin")
KEY_HEADER = "X-Session-ID"


class KeyedUsage(BaseModel):
    """Prompt tokens of the requests under one affinity key."""

    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0

    def plus(self, other: KeyedUsage) -> KeyedUsage:
        return KeyedUsage(
            requests=self.requests + other.requests,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class UsageByKey(httpx.AsyncBaseTransport):
    """Forwards every request and adds the usage of its reply to its affinity key's total."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.by_key: dict[str | None, KeyedUsage] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        body = b"".join([chunk async for chunk in response.aiter_raw()])
        await response.aclose()
        if response.status_code == 200:
            usage = json.loads(body).get("usage") or {}
            totals = self.by_key.setdefault(request.headers.get(KEY_HEADER), KeyedUsage())
            totals.requests += 1
            totals.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            details = usage.get("prompt_tokens_details") or {}
            totals.cached_tokens += int(details.get("cached_tokens") or 0)
        return httpx.Response(
            response.status_code, headers=response.headers, content=body, request=request
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def run_policy(policy: str, args: argparse.Namespace) -> tuple[UsageByKey, float, list[str]]:
    """One GRSE iteration through `args.replicas` replicas behind the router with `policy`;
    the recorded usage, the wall time and the training questions' keys."""
    settings = EngineSettings(model=args.model, cache_dir=default_cache_dir())
    usage = UsageByKey()
    with tempfile.TemporaryDirectory(prefix="grse-replicas-") as scratch:
        folder = Path(scratch)
        router = RouterSettings(policy=policy)
        with LocalReplicas(settings, args.replicas, router=router, log_dir=folder / "logs") as up:
            started = time.perf_counter()
            run = train_once(up.base_url, usage, folder / "run", args)
            wall = time.perf_counter() - started
        keys = sorted({question_key(r.question_id) for r in run.rollouts.read()})
    return usage, wall, keys


def train_once(
    base_url: str, usage: UsageByKey, run_path: Path, args: argparse.Namespace
) -> RunFolder:
    """One GRSE iteration of the demo task with every role at `base_url`."""
    roles_at = {f"{role}.base_url": base_url for role in ("actor", "critic", "optimizer")}
    llm = load_config(overrides={**roles_at, "actor.max_tokens": DEMO_ACTOR_MAX_TOKENS})
    config = learning_config(
        "grse",
        iterations=1,
        batch_size=args.questions,
        validation_size=args.validation,
        group_size=args.group_size,
        seed=args.seed,
    )
    ledger = UsageLedger()
    run = RunFolder(run_path)
    with ModelRoles(llm, ledger, async_transport=usage) as roles:
        deps = TrainingDeps(
            task=load_task("demo"),
            provider=roles,
            config=config,
            run=run,
            usage=lambda: ledger.report().model_dump(mode="json"),
        )
        asyncio.run(run_training(deps))
    return run


def policy_table(policy: str, usage: UsageByKey, wall: float, groups: list[str]) -> Table:
    table = Table(title=f"{policy}: {wall:.0f} s")
    for column in ("requests of", "requests", "prompt tokens", "from cache", "cached share"):
        table.add_column(column, justify="left" if column == "requests of" else "right")
    rows = [(f"group {key}", usage.by_key.get(key, KeyedUsage())) for key in groups]
    validation = KeyedUsage()
    for key, totals in usage.by_key.items():
        if key is not None and key not in groups:
            validation = validation.plus(totals)
    rows.append(("validation questions", validation))
    rows.append(("no key (optimizer)", usage.by_key.get(None, KeyedUsage())))
    for label, totals in rows:
        table.add_row(
            label,
            str(totals.requests),
            str(totals.prompt_tokens),
            str(totals.cached_tokens),
            f"{totals.cached_share:.0%}",
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="small", help="embedded model (default: small)")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--questions", type=int, default=4, help="training questions (groups)")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--validation", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    find_router()
    console = output_console()
    shares: dict[str, float] = {}
    for policy in POLICIES:
        usage, wall, groups = run_policy(policy, args)
        console.print(policy_table(policy, usage, wall, groups))
        grouped = [usage.by_key[k] for k in groups if k in usage.by_key]
        prompt = sum(t.prompt_tokens for t in grouped)
        shares[policy] = sum(t.cached_tokens for t in grouped) / prompt if prompt else 0.0
    console.print(
        "groups' prompt tokens served from cache: "
        + ", ".join(f"{policy} {share:.0%}" for policy, share in shares.items())
    )


if __name__ == "__main__":
    main()
