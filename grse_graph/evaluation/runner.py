"""`run_evaluation`: answer every question of a split, concurrently, resumably, and summarise."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TypedDict

import langsmith
from langsmith.utils import tracing_is_enabled
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from grse_graph.llm.affinity import affinity, question_key
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.metrics.analysis import answer_state
from grse_graph.output import output_console
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team.spec import TeamSpec

from .answerer import QuestionAnswerer, TeamAnswerer
from .records import AnswerStateName, EvalSummary, PredictionRecord, RunConfig
from .store import EvalFolder
from .summary import summarize, summary_table


def rollout_id_for(method: str, question: TaskQuestion) -> str:
    """The rollout id of an evaluation question (stable across resumes)."""
    return f"eval:{method}:{question.id}"


async def answer_question(answerer: QuestionAnswerer, question: TaskQuestion) -> PredictionRecord:
    """Answer and score one question; any exception becomes a failed record.

    With LangSmith tracing on, each question is one trace (the answerer's model calls nest in
    it, a failed answer included) and the record keeps its id as `trace_id`; with tracing off
    it keeps the team rollout's own trace id (`grse_graph.tracing`), if any.
    """
    if not tracing_is_enabled():
        record = await _answer_question(answerer, question)
        rollout_trace = record.rollout.trace_id if record.rollout is not None else None
        return record.model_copy(update={"trace_id": rollout_trace})
    async with langsmith.trace(
        f"eval:{answerer.method}:{question.id}",
        run_type="chain",
        inputs={"question_id": question.id},
        metadata={"question_id": question.id, "method": answerer.method},
    ) as tree:
        record = await _answer_question(answerer, question)
        tree.end(outputs={"prediction": record.prediction, "failed": record.failed})
    return record.model_copy(update={"trace_id": str(tree.trace_id)})


async def _answer_question(answerer: QuestionAnswerer, question: TaskQuestion) -> PredictionRecord:
    started = time.perf_counter()
    asked = PredictionRecord(
        id=question.id,
        question=question.question,
        answer=question.answer,
        category=question.category,
    )
    try:
        rollout = await answerer.answer(
            question, rollout_id=rollout_id_for(answerer.method, question)
        )
    except asyncio.CancelledError:
        raise
    except Exception as error:
        return asked.model_copy(
            update={
                "failed": True,
                "error": f"{type(error).__name__}: {error}",
                "latency_s": time.perf_counter() - started,
            }
        )
    state: AnswerStateName | None = (
        answer_state(rollout.answer, rollout.metrics["f1"]) if "f1" in rollout.metrics else None
    )
    return asked.model_copy(
        update={
            "prediction": rollout.answer,
            "metrics": rollout.metrics,
            "reward": rollout.reward,
            "state": state,
            "latency_s": time.perf_counter() - started,
            "rollout": rollout,
        }
    )


def failures_bar(console: Console, *, disable: bool = False) -> Progress:
    """The progress bar of a run of many units: description, bar, done/total, the count of
    failed units (a task field `failed`), elapsed time."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        console=console,
        disable=disable,
    )


class EvaluationOptions(TypedDict, total=False):
    """The keyword options of `run_evaluation` that a caller may pass through (a baseline's
    run sets the sampling itself)."""

    limit: int | None
    concurrency: int
    progress: bool
    retry_failed: bool
    data: str | None
    model: str | None
    console: Console | None


async def run_evaluation(
    task: Task,
    split: str,
    spec: TeamSpec | QuestionAnswerer,
    provider: ChatModelProvider,
    out_dir: Path,
    *,
    limit: int | None = None,
    concurrency: int = 1,
    sampling: SamplingSettings | None = None,
    progress: bool = True,
    retry_failed: bool = True,
    data: str | None = None,
    model: str | None = None,
    console: Console | None = None,
) -> EvalSummary:
    """Evaluate a team (or any `QuestionAnswerer`, such as a baseline) on a task split.

    The first `limit` questions of the split are answered, at most `concurrency` at a time. Each
    finished question is appended to `out_dir/predictions.jsonl` at once; `summary.json` is
    written at the end. Running again with the same `out_dir` skips finished questions (and, with
    `retry_failed`, runs failed ones again); `run.json` guards against resuming a different run.
    A question that raised is recorded as failed and counts 0 in every average. With
    `progress`, a progress bar and the summary table are printed to `console`. `data` and
    `model` describe the data path and the answering model in `run.json`.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    sampling = sampling or SamplingSettings.greedy()
    answerer: QuestionAnswerer = (
        TeamAnswerer(spec, task, provider, sampling) if isinstance(spec, TeamSpec) else spec
    )
    questions = list(task.split(split))[: limit if limit is not None else None]
    folder = EvalFolder(Path(out_dir))
    folder.open_run(
        RunConfig(
            task=task.name,
            split=split,
            method=answerer.method,
            method_config=answerer.describe(),
            data=data,
            categories=list(task.categories),
            model=model,
        )
    )
    done = folder.read_predictions()
    pending = [q for q in questions if q.id not in done or (retry_failed and done[q.id].failed)]
    console = console or output_console()
    semaphore = asyncio.Semaphore(concurrency)
    earlier_s = folder.read_elapsed_s()
    started = time.perf_counter()
    with failures_bar(console, disable=not progress) as bar:
        bar_id = bar.add_task(
            f"{task.name}/{split} {answerer.method}",
            total=len(questions),
            completed=len(questions) - len(pending),
            failed=0,
        )
        failures = 0

        async def run_one(question: TaskQuestion) -> None:
            nonlocal failures
            async with semaphore:
                with affinity(question_key(question.id)):
                    record = await answer_question(answerer, question)
            folder.append(record)
            done[record.id] = record
            failures += int(record.failed)
            bar.update(bar_id, advance=1, failed=failures)

        await asyncio.gather(*(run_one(q) for q in pending))
    records = [done[q.id] for q in questions if q.id in done]
    summary = summarize(
        records,
        task=task.name,
        split=split,
        method=answerer.method,
        questions=len(questions),
        categories=list(task.categories),
        elapsed_s=earlier_s + time.perf_counter() - started,
        out_dir=str(folder.path),
        evidence=task.kind == "conversation",
    )
    folder.write_summary(summary)
    if progress:
        console.print(summary_table(summary))
    return summary
