"""A GRSE iteration whose team runs through vLLM's router over two embedded engine replicas
(small model, two threads each, one request at a time): each question's requests land on one
replica, a replica killed mid-run costs a retry and the run completes, and a resume of the
finished run asks no model anything.

The critic and the optimizer answer from the scripted server (`SCRIPTED_JUDGES`): the small
model cannot fill GRSE's critique within any cap a test can afford, and every critique must
parse here. The critic's requests still carry their question's key, which the witness reads;
only the team's requests (rollouts and validation) go through the router.

Which replica computed a request is read from the replicas' own ``/metrics`` (their token
counters), around each request; the witness transport below sends one router request at a time
so that every counter that moves belongs to that request.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest

from grse_graph.llm import ModelRoles, UsageLedger
from grse_graph.llm.affinity import question_key
from grse_graph.llm.config import EngineSettings, default_cache_dir
from grse_graph.llm.replicas import ROUTER_EXECUTABLE, LocalReplicas
from grse_graph.methods.grse.method import CritiqueRecord
from grse_graph.tasks.registry import load_task
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import TrainResult, run_training
from tests.fakeserver import FakeOpenAIServer
from tests.faults.harness import repeated_units
from tests.tiny_task import TINY_ROWS, tiny_grse_config, tiny_llm, write_tiny_task

pytestmark = pytest.mark.engine

KEY_HEADER = "X-Session-ID"
COUNTERS = re.compile(r"^llamacpp:(?:prompt_tokens_total|tokens_predicted_total) (\S+)$", re.M)
TRAIN_QUESTIONS = 2
"""The tiny task's two groups: the failover needs none of them on the killed replica (the
validation question that picked the replica to kill is asked again after the kill)."""


class Served(NamedTuple):
    """One request as the witness saw it."""

    key: str | None
    replicas: list[int]
    status: int


class ReplicaWitness(httpx.AsyncBaseTransport):
    """Forwards the router's requests one at a time and records, for each, its affinity key, its
    status and the replicas whose token counters moved while it ran; after the first answered
    request whose key is in `kill_on`, kills the replica that served it (SIGKILL). A request to
    any other server (the scripted judges) is passed on and recorded as (role, key)."""

    def __init__(self, replicas: LocalReplicas, kill_on: frozenset[str]) -> None:
        self._replicas = replicas
        self._kill_on = kill_on
        self._inner = httpx.AsyncHTTPTransport()
        self._lock: asyncio.Lock | None = None
        self.served: list[Served] = []
        self.scripted: list[tuple[str, str | None]] = []
        self.killed_after: int | None = None
        self.killed: int | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = request.headers.get(KEY_HEADER)
        if not str(request.url).startswith(self._replicas.base_url):
            # The scripted server serves /<role>/v1/...: its first path segment is the role.
            self.scripted.append((request.url.path.split("/")[1], key))
            return await self._inner.handle_async_request(request)
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            before = await self._counters()
            response = await self._inner.handle_async_request(request)
            raw = b"".join([chunk async for chunk in response.aiter_raw()])
            await response.aclose()
            after = await self._counters()
            moved = [i for i, total in after.items() if total > before.get(i, total)]
            self.served.append(Served(key=key, replicas=moved, status=response.status_code))
            if self.killed is None and key in self._kill_on and len(moved) == 1:
                self.killed, self.killed_after = moved[0], len(self.served)
                os.kill(self._replicas.engines[moved[0]].pid, signal.SIGKILL)
            return httpx.Response(
                response.status_code, headers=response.headers, content=raw, request=request
            )

    async def _counters(self) -> dict[int, float]:
        """Each live replica's prompt plus generated token count."""
        totals: dict[int, float] = {}
        async with httpx.AsyncClient(timeout=5.0) as client:
            for index, url in enumerate(self._replicas.worker_urls):
                if index == self.killed:
                    continue
                text = (await client.get(f"{url}/metrics")).text
                totals[index] = sum(float(value) for value in COUNTERS.findall(text))
        return totals

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[LocalReplicas]:
    if shutil.which(ROUTER_EXECUTABLE) is None:
        pytest.skip("vllm-router is not installed (pip install 'grse-graph[serve]')")
    settings = EngineSettings(model="small", n_ctx=4096, threads=2, cache_dir=default_cache_dir())
    with LocalReplicas(settings, 2, log_dir=tmp_path / "logs") as started:
        yield started


@pytest.fixture
def scripted() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def _train(
    replicas: LocalReplicas,
    scripted: FakeOpenAIServer,
    data: Path,
    run: RunFolder,
    witness: ReplicaWitness,
    *,
    resume: bool,
) -> TrainResult:
    llm = tiny_llm(replicas.base_url, scripted)
    config = tiny_grse_config(data, batch_size=TRAIN_QUESTIONS)
    ledger = UsageLedger()
    with ModelRoles(llm, ledger, async_transport=witness) as roles:
        deps = TrainingDeps(
            task=load_task("jsonl", data=data),
            provider=roles,
            config=config,
            run=run,
            usage=lambda: ledger.report().model_dump(mode="json"),
        )
        return asyncio.run(run_training(deps, resume=resume))


def test_each_question_on_one_replica_and_a_killed_replica_costs_a_retry(
    replicas: LocalReplicas, scripted: FakeOpenAIServer, tmp_path: Path
) -> None:
    data = write_tiny_task(tmp_path / "tiny.jsonl")
    keys = {
        split: {question_key(f"q{i}") for i, row in enumerate(TINY_ROWS) if row[0] == split}
        for split in ("train", "validation")
    }
    run = RunFolder(tmp_path / "run")
    witness = ReplicaWitness(replicas, kill_on=frozenset(keys["validation"]))

    result = _train(replicas, scripted, data, run, witness, resume=False)

    assert witness.killed is not None and witness.killed_after is not None, witness.served
    before, after = witness.served[: witness.killed_after], witness.served[witness.killed_after :]
    placement: dict[str, set[int]] = {}
    for served in before:
        assert served.status == 200 and len(served.replicas) == 1, served
        if served.key is not None:
            placement.setdefault(served.key, set()).update(served.replicas)
    print("replica of each key before the kill:", {k: sorted(v) for k, v in placement.items()})
    assert all(len(replicas) == 1 for replicas in placement.values()), placement
    # Each group's rollouts are on one replica; its critic call, on the scripted server, carries
    # the same key (a router would send it where the rollouts ran).
    assert keys["train"] <= placement.keys(), placement
    assert {key for role, key in witness.scripted if role == "critic"} == keys["train"]
    critiques = run.credits(CritiqueRecord).read()
    assert len(critiques) == TRAIN_QUESTIONS
    for critique in critiques:
        assert critique.kept and critique.error is None and critique.result is not None, critique

    survivor = 1 - witness.killed
    print("after the kill:", [(s.key, s.replicas, s.status) for s in after])
    answered = [s for s in after if s.status == 200]
    failed = [s for s in after if s.status != 200]
    assert answered, "nothing ran after the kill"
    assert all(s.replicas == [survivor] for s in answered), after
    # A request in flight to the dead replica before the router took it out fails without
    # computing anything, and costs its key one retry.
    assert all(s.replicas == [] for s in failed), after
    failed_keys = [s.key for s in failed]
    assert len(failed_keys) == len(set(failed_keys)), after
    killed_keys = {k for k, replicas in placement.items() if replicas == {witness.killed}}
    # The failover was exercised: a key of the killed replica was answered by the survivor.
    assert killed_keys & {s.key for s in answered}, (killed_keys, after)

    assert result.iterations_done == 1
    assert all(record.rollout.error is None for record in run.rollouts.read())
    (gate,) = run.gate.read()
    assert len(run.validation.read()) == 2 * (1 + len(gate.decisions))

    again = ReplicaWitness(replicas, kill_on=frozenset())
    resumed = _train(replicas, scripted, data, run, again, resume=True)
    assert resumed.iterations_done == 1
    assert again.served == [] and again.scripted == [], (again.served, again.scripted)
    assert repeated_units(run.path) == []
