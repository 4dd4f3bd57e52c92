"""One training iteration of every registered credit method on the same questions and engine.

    python benchmarks/methods.py [--model default|small|PATH] [--task demo] [--questions 3]
        [--validation 2] [--methods grse,maskills] [--group-size 4] [--out DIR]

Every method gets the demo's loop-level settings (`learning_config`: seed, decoding, the
CPU-sized actor, critic and optimizer caps) with the given task, batch and validation set, and a
fresh embedded engine, so the runs differ only in the method
section; GRSE runs with G = --group-size (4). Printed side by side: wall time; calls and
tokens per role, with the actor split into training rollouts and validation (from the step
usage recorded in rollouts.jsonl and validation.jsonl; the ledger's actor total next to it);
the critic payload (characters sent, summed over credit units); credit units credited and
failed, credits the checks kept, GRSE's accepted/repaired diagnoses; the plan's directions and
induction evidence; and the gate's decisions.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from grse_graph.llm import LLMConfig, load_config
from grse_graph.methods.base import CreditRecord
from grse_graph.methods.registry import METHOD_NAMES
from grse_graph.output import output_console
from grse_graph.team.rollout import Rollout
from grse_graph.training.config import TrainConfig
from grse_graph.training.demo import (
    DEMO_ACTOR_MAX_TOKENS,
    demo_llm_overrides,
    learning_config,
    settings_read_by,
)
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from grse_graph.training.session import load_training_task, open_endpoints


def step_tokens(rollouts: Sequence[Rollout]) -> tuple[int, int, int]:
    """(model calls, prompt tokens, completion tokens) summed over the rollouts' steps."""
    steps = [s for r in rollouts for s in r.steps]
    return (
        sum(s.usage.model_calls for s in steps),
        sum(s.usage.prompt_tokens for s in steps),
        sum(s.usage.completion_tokens for s in steps),
    )


def credit_measures(records: Sequence[CreditRecord]) -> dict[str, int]:
    """What the credit records say, for records whose `result` carries `payload_chars` and
    `credits` (GRSE and MASkills do) and, for GRSE, diagnosis `counts`."""
    out = {"units": len(records), "credited": 0, "failed": 0, "skipped": 0}
    out |= {"payload": 0, "credits": 0, "accepted": 0, "repaired": 0, "dropped": 0}
    for record in records:
        out["credited"] += record.credited
        out["failed"] += record.error is not None
        out["skipped"] += not record.kept
        result = getattr(record, "result", None)
        if result is None:
            continue
        out["payload"] += int(getattr(result, "payload_chars", 0))
        out["credits"] += len(getattr(result, "credits", []))
        counts = getattr(result, "counts", None)
        if counts is not None:
            out["accepted"] += counts.accepted
            out["repaired"] += counts.repaired
            out["dropped"] += counts.dropped
    return out


def run_method(
    llm: LLMConfig, config: TrainConfig, folder: Path, console: Console
) -> dict[str, Any]:
    """One iteration of `config.method` on a fresh engine; returns the measurements."""
    run = RunFolder(folder)
    with open_endpoints(llm, engine_log=folder / "engine.log") as endpoints:
        deps = TrainingDeps(
            task=load_training_task(config),
            provider=endpoints.roles,
            config=config,
            run=run,
            usage=lambda: endpoints.ledger.report().model_dump(mode="json"),
        )
        started = time.monotonic()
        result = asyncio.run(run_training(deps))
        wall = time.monotonic() - started
        usage = endpoints.ledger.report()
    method = deps.credit_method()
    # The first iteration's plan (SkillMAS's final measurement round records one more).
    plan = next(record for record in run.aggregates.read() if record.iteration == 1)
    console.print(f"{method.name}: {wall:.0f} s, run folder {folder}")
    return {
        "wall": wall,
        "usage": usage,
        "rollouts_per_question": method.rollouts_per_question(),
        "training": step_tokens([r.rollout for r in run.rollouts.read()]),
        "validation": step_tokens([r.rollout for r in run.validation.read()]),
        "credit": credit_measures(run.credits(method.record_type).read()),
        "plan": plan.result,
        "gate": result.gates[0],
    }


def main() -> None:
    """Run every chosen method and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--task", default="demo")
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--validation", type=int, default=2)
    parser.add_argument("--methods", default=",".join(METHOD_NAMES))
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    console = output_console()
    out = args.out or Path(tempfile.mkdtemp(prefix="grse-methods-bench-"))
    llm = load_config(overrides=demo_llm_overrides(args.model))
    results: dict[str, dict[str, Any]] = {}
    for name in args.methods.split(","):
        # The demo's loop settings and CPU-sized caps for every method; only the method
        # section differs (GRSE's G from --group-size).
        # SkillMAS (checkpoint=train) reads no validation size: it is not passed to it.
        loop = {"validation_size": args.validation, "validation_repeats": 1}
        config = learning_config(
            name,
            task=args.task,
            iterations=1,
            group_size=args.group_size,
            batch_size=args.questions,
            **settings_read_by(name, loop),
        ).model_copy(update={"actor_max_tokens": DEMO_ACTOR_MAX_TOKENS})
        try:
            results[name] = run_method(llm, config, out / name, console)
        except Exception as error:  # one method failing must not hide the others
            console.print(f"{name}: failed: {type(error).__name__}: {error}", markup=False)
    if not results:
        raise SystemExit("every method failed")

    table = Table(
        title=f"one iteration per method: {args.task}, {args.questions} question(s), "
        f"|V|={args.validation}, model {args.model}"
    )
    table.add_column("measure")
    for name in results:
        table.add_column(name, justify="right")

    def row(label: str, fn: Any) -> None:
        table.add_row(label, *(fn(r) for r in results.values()))

    def calls_tokens(triple: tuple[int, int, int]) -> str:
        return f"{triple[0]} / {triple[1]} / {triple[2]}"

    row("rollouts per question", lambda r: str(r["rollouts_per_question"]))
    row("wall time (s)", lambda r: f"{r['wall']:.1f}")
    row("actor training: calls / prompt / completion", lambda r: calls_tokens(r["training"]))
    row("actor validation: calls / prompt / completion", lambda r: calls_tokens(r["validation"]))
    for role in ("actor", "critic", "optimizer"):
        row(
            f"{role} (ledger): calls / prompt / completion",
            lambda r, role=role: calls_tokens(
                (
                    r["usage"].role(role).calls,
                    r["usage"].role(role).prompt_tokens,
                    r["usage"].role(role).completion_tokens,
                )
            ),
        )
    row("critic payload (chars)", lambda r: str(r["credit"]["payload"]))
    row(
        "credit units: credited / failed / skipped",
        lambda r: f"{r['credit']['credited']} / {r['credit']['failed']} / {r['credit']['skipped']}",
    )
    row("credits kept by the checks", lambda r: str(r["credit"]["credits"]))
    row(
        "diagnoses accepted / repaired / dropped",
        lambda r: (
            f"{r['credit']['accepted']} / {r['credit']['repaired']} / {r['credit']['dropped']}"
        ),
    )
    row(
        "plan: directions / patterns / agent evidence",
        lambda r: (
            f"{len(r['plan'].directions)} / {len(r['plan'].patterns)} / "
            f"{len(r['plan'].agent_evidence)}"
        ),
    )
    row("gate base score", lambda r: f"{r['gate'].base_score:.3f}")
    row(
        "gate decisions",
        lambda r: (
            ", ".join(
                f"{d.agent} {d.candidate_score:.3f} {'accepted' if d.accepted else 'rejected'}"
                for d in r["gate"].decisions
            )
            or "no candidate"
        ),
    )
    console.print(table)


if __name__ == "__main__":
    main()
