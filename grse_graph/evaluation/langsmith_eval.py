"""LangSmith evaluation of a team or a trained pack with the task's official scorers.

The pieces plug into `langsmith.evaluate` (sync) and `langsmith.aevaluate` (async):

* `task_examples` turns a task split into LangSmith `Example`s (inputs: the question without
  its gold answer; reference outputs: the gold answer), and `ensure_dataset` uploads them once
  to a named LangSmith dataset;
* `team_target` / `pack_target` are async targets that run the team (with the libraries of a
  trained pack) on one example; `sync_target` wraps either for `evaluate`, which calls targets
  from worker threads, although the team's nodes are async-only;
* `official_evaluator` scores a target's answer with the task's own scorer (HotpotQA EM/F1,
  LoCoMo F1 and smoothed BLEU, exact match), one feedback key per metric plus `reward`, and a
  `failed` key so a target that raised is counted, not scored as a silent zero;
* `run_langsmith_eval` is what `grse eval --langsmith` runs: offline (`upload_results=False`,
  nothing leaves the machine) when no LangSmith API key is set, uploaded otherwise.

Each target output carries the trace id and run id of its team execution, so a row can be
found in LangSmith.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langsmith import schemas
from langsmith.run_helpers import get_current_run_tree, get_tracing_context, tracing_context
from pydantic import BaseModel, Field, ValidationError

from grse_graph.errors import ConfigError, TaskError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.skills import import_pack
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team import SkillMode, TeamSpec, default_team, run_rollout
from grse_graph.tracing import TRACE_METADATA_KEY
from grse_graph.validation_text import describe_validation_error

T = TypeVar("T")
Inputs = Mapping[str, Any]
AsyncTarget = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
SyncTarget = Callable[[dict[str, Any]], dict[str, Any]]

API_KEY_VARIABLES = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
_EXAMPLE_NAMESPACE = uuid.UUID("6f1c2a8e-55f0-4d6c-9a43-1f0e2b7c9d10")
"""Fixed namespace: an example's id depends only on task, split and question id."""


def example_id(task: str, split: str, question_id: str) -> uuid.UUID:
    """The stable LangSmith example id of one question (the same on every upload)."""
    return uuid.uuid5(_EXAMPLE_NAMESPACE, f"{task}/{split}/{question_id}")


def question_inputs(question: TaskQuestion) -> dict[str, Any]:
    """An example's inputs: the question in `TaskQuestion`'s shape without the gold answer."""
    return question.model_dump(mode="json", exclude={"answer"})


def question_from(inputs: Inputs, answer: str = "") -> TaskQuestion:
    """The `TaskQuestion` an example's inputs describe (the gold answer given separately)."""
    try:
        return TaskQuestion.model_validate({**inputs, "answer": answer})
    except ValidationError as error:
        raise TaskError(
            f"LangSmith example inputs are not a task question: {describe_validation_error(error)}"
        ) from None


def _questions(task: Task, split: str, limit: int | None) -> list[TaskQuestion]:
    questions = list(task.split(split))[: limit if limit is not None else None]
    if not questions:
        raise TaskError(f"task {task.name}: split {split!r} has no questions")
    return questions


def example_rows(task: Task, split: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The split as `Client.create_examples` rows: id, inputs, outputs, metadata."""
    return [
        {
            "id": str(example_id(task.name, split, q.id)),
            "inputs": question_inputs(q),
            "outputs": {"answer": q.answer},
            "metadata": {"task": task.name, "split": split, "category": q.category},
        }
        for q in _questions(task, split, limit)
    ]


def task_examples(task: Task, split: str, limit: int | None = None) -> list[schemas.Example]:
    """The split as in-memory LangSmith examples, for `evaluate(..., data=examples)` offline."""
    dataset = uuid.uuid5(_EXAMPLE_NAMESPACE, f"{task.name}/{split}")
    return [
        schemas.Example(
            id=uuid.UUID(row["id"]),
            dataset_id=dataset,
            inputs=row["inputs"],
            outputs=row["outputs"],
            metadata=row["metadata"],
        )
        for row in example_rows(task, split, limit)
    ]


def dataset_name(task: Task, split: str) -> str:
    """The default LangSmith dataset name of a split."""
    return f"grse-{task.name}-{split}"


def ensure_dataset(client: Any, task: Task, split: str, *, limit: int | None = None) -> str:
    """Create the split's dataset in LangSmith if missing and upsert its examples; its name.

    `client` is a `langsmith.Client` (or anything with `has_dataset`, `create_dataset` and
    `create_examples`). Example ids are stable, so uploading again updates rather than duplicates.
    """
    chosen = dataset_name(task, split)
    if not client.has_dataset(dataset_name=chosen):
        client.create_dataset(chosen, description=f"grse-graph task {task.name}, split {split}")
    client.create_examples(dataset_name=chosen, examples=example_rows(task, split, limit))
    return chosen


# -- targets ---------------------------------------------------------------------------------


def team_target(spec: TeamSpec, task: Task, provider: ChatModelProvider) -> AsyncTarget:
    """An async LangSmith target: one greedy execution of the team on the example's question.

    Output: `answer`, `rollout_id`, `trace_id`, `run_id` and `steps` (the agents in order).
    """

    async def target(inputs: dict[str, Any]) -> dict[str, Any]:
        question = question_from(inputs)
        tree = get_current_run_tree()
        parent: RunnableConfig | None = (
            {"metadata": {TRACE_METADATA_KEY: str(tree.trace_id)}} if tree is not None else None
        )
        # An offline experiment traces "locally", but LangChain's tracer would still post the
        # team's runs to the LangSmith API: below the target's own run, tracing is off then.
        local = get_tracing_context()["enabled"] == "local"
        with tracing_context(enabled=False) if local else contextlib.nullcontext():
            rollout = await run_rollout(
                spec,
                task,
                question,
                provider,
                sampling=SamplingSettings.greedy(),
                rollout_id=f"langsmith:{question.id}",
                metadata={"method": "team", "source": "langsmith"},
                parent=parent,
            )
        return {
            "answer": rollout.answer,
            "rollout_id": rollout.rollout_id,
            "trace_id": rollout.trace_id,
            "run_id": rollout.run_id,
            "steps": [step.agent for step in rollout.steps],
        }

    return target


def pack_team(pack: Path, task: Task, *, skill_mode: SkillMode = "inline") -> TeamSpec:
    """The task's default team with each agent's library from a trained pack."""
    if not pack.is_dir():
        raise ConfigError(f"{pack}: not a pack folder")
    return default_team(task, dict(import_pack(pack)), skill_mode=skill_mode)


def pack_target(pack: Path, task: Task, provider: ChatModelProvider) -> AsyncTarget:
    """An async LangSmith target running the team with a trained pack's libraries."""
    return team_target(pack_team(pack, task), task, provider)


def run_sync(coroutine: Awaitable[T]) -> T:
    """Run a coroutine to completion from synchronous code.

    On a thread without a running loop (where `langsmith.evaluate` calls targets) it gets its
    own `asyncio.run`; called from inside a running loop it runs on a helper thread, in a copy
    of the caller's context so the LangSmith parent run is kept either way.
    """

    async def wrapped() -> T:
        return await coroutine

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrapped())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, wrapped()).result()


def sync_target(target: AsyncTarget) -> SyncTarget:
    """A synchronous LangSmith target around an async one (for `langsmith.evaluate`)."""

    def sync(inputs: dict[str, Any]) -> dict[str, Any]:
        return run_sync(target(inputs))

    return sync


# -- evaluators ------------------------------------------------------------------------------


def official_evaluator(task: Task) -> Callable[..., dict[str, Any]]:
    """A LangSmith evaluator scoring the target's `answer` with the task's official scorer.

    It returns one feedback key per metric of the task (e.g. `f1`, `em`; `f1`, `bleu`), the
    task's `reward` and `failed` (1 when the target produced no answer: it raised).
    """

    def official_scores(
        inputs: dict[str, Any], outputs: dict[str, Any], reference_outputs: dict[str, Any]
    ) -> dict[str, Any]:
        question = question_from(inputs, str((reference_outputs or {}).get("answer", "")))
        if not outputs or "answer" not in outputs:
            keys = {"reward": 0.0, "failed": 1.0}
            return {"results": [{"key": k, "score": v} for k, v in keys.items()]}
        scored = task.score(question, str(outputs["answer"]))
        keys = {**scored.metrics, "reward": scored.reward, "failed": 0.0}
        return {"results": [{"key": k, "score": v} for k, v in keys.items()]}

    official_scores.__name__ = f"{task.name}_official"
    return official_scores


# -- the `grse eval --langsmith` run ---------------------------------------------------------


class LangSmithRow(BaseModel):
    """One evaluated example."""

    question_id: str
    prediction: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    trace_id: str | None = None
    error: str | None = None


class LangSmithSummary(BaseModel):
    """The result of `run_langsmith_eval`: the experiment, mean scores and one row per example."""

    experiment: str
    uploaded: bool
    dataset: str | None = None
    examples: int
    failed: int
    means: dict[str, float]
    rows: list[LangSmithRow]


def langsmith_api_key() -> str | None:
    """The LangSmith API key from the environment, if any (upload is off without one)."""
    return next((os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), None)


def offline_client() -> Any:
    """A `langsmith.Client` for `upload_results=False` runs: without the background tracing
    thread a default client starts (which asks the LangSmith API for its info at once)."""
    from langsmith import Client

    return Client(auto_batch_tracing=False)


def _row(result: Mapping[str, Any]) -> LangSmithRow:
    run, example = result["run"], result["example"]
    outputs = getattr(run, "outputs", None) or {}
    scores = {
        r.key: float(r.score)
        for r in result["evaluation_results"]["results"]
        if isinstance(r.score, int | float)
    }
    return LangSmithRow(
        question_id=str(example.inputs.get("id")),
        prediction=outputs.get("answer"),
        scores=scores,
        trace_id=outputs.get("trace_id"),
        error=getattr(run, "error", None),
    )


def summarize_rows(
    experiment: str, rows: Sequence[LangSmithRow], *, uploaded: bool, dataset: str | None
) -> LangSmithSummary:
    """Mean of every feedback key over the rows that report it plus the failed rows (which
    count 0): a mixed task scores passages by EM and conversations by BLEU, and a row without a
    metric does not pull that metric's mean down (as in `grse eval`'s summary)."""
    keys = list(dict.fromkeys(k for row in rows for k in row.scores))
    failed_rows = [r for r in rows if r.error is not None or r.scores.get("failed", 0.0) > 0]
    means: dict[str, float] = {}
    for key in keys:
        reporting = [r.scores[key] for r in rows if key in r.scores and r not in failed_rows]
        counted = len(reporting) + len(failed_rows)
        failed_sum = sum(r.scores.get(key, 0.0) for r in failed_rows)
        means[key] = (sum(reporting) + failed_sum) / counted if counted else 0.0
    failed = len(failed_rows)
    return LangSmithSummary(
        experiment=experiment,
        uploaded=uploaded,
        dataset=dataset,
        examples=len(rows),
        failed=failed,
        means=means,
        rows=list(rows),
    )


async def run_langsmith_eval(
    target: AsyncTarget,
    task: Task,
    split: str,
    *,
    limit: int | None = None,
    concurrency: int = 1,
    upload: bool | None = None,
) -> LangSmithSummary:
    """`langsmith.aevaluate` of `target` over the split with the official evaluator.

    `upload` None means: upload when a LangSmith API key is set. Offline, the examples stay in
    memory and `upload_results=False` keeps every run and score local; uploading puts the split
    into the dataset `grse-<task>-<split>` first.
    """
    from langsmith import Client, aevaluate

    uploading = langsmith_api_key() is not None if upload is None else upload
    data: Any
    dataset: str | None = None
    if uploading:
        client = Client()
        dataset = ensure_dataset(client, task, split, limit=limit)
        data = dataset
    else:
        client = offline_client()
        data = task_examples(task, split, limit)
    results = await aevaluate(
        target,
        data=data,
        evaluators=[official_evaluator(task)],
        experiment_prefix=f"grse-{task.name}-{split}",
        max_concurrency=concurrency,
        client=client,
        upload_results=uploading,
        metadata={"task": task.name, "split": split},
    )
    rows = [_row(result) async for result in results]
    order = {q.id: i for i, q in enumerate(task.split(split))}
    rows.sort(key=lambda r: order.get(r.question_id, len(order)))
    return summarize_rows(results.experiment_name, rows, uploaded=uploading, dataset=dataset)
