"""One GRSE iteration (G = 4) under named request profiles, on the same questions and engine.

    python benchmarks/iteration.py --compare [--model default] [--questions 2] [--validation 2]
    python benchmarks/iteration.py --compare --seeds 0,1,2
    python benchmarks/iteration.py --profiles default,input-first [--model small]

A profile pins everything about how requests are made: the engine, the structured-output
method and cap of each role, the first agent's n=G call, concurrency and the prompt layout.
`today` is the path of commit 13618e1 (before the throughput work, with the paper's operator
caps and function calling; the per-agent critic schema
pinned); `default` is what the project does now (the demo's settings); `input-first` is the
default with the shared task input laid out first
(`grse_graph.team.layout`). `--compare` runs `today` then `default`, each on a fresh engine,
and prints per profile: wall time; the share of it the engine was busy; prompt tokens the
engine computed vs served from its prefix cache (its own report); calls and tokens per role;
critic outputs that failed to parse or validate; diagnoses accepted / repaired / dropped by the
attribution checks; runaway generations stopped; and the ratio of wall times. `--custom
llm.critic.schema_narrowing=flat` adds the defaults with the flat critic schema.

One iteration is one sample: the seed picks the training questions and the rollouts' samples,
and whether a structured call runs away to its cap depends on them. `--seeds 0,1,2` runs every
profile once per seed (different questions and samples, the same for every profile) and ends
with a summary: each profile's wall time per seed, their sum, and the ratio of the sums.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.table import Table

from grse_graph.llm import LLMConfig, PromptEvalStats, SamplingSettings, load_config
from grse_graph.llm.provider import ChatModelProvider, RoleName
from grse_graph.methods.grse.aggregate import DEFAULT_AGGREGATE_MAX_TOKENS
from grse_graph.methods.grse.method import CritiqueRecord
from grse_graph.methods.operators.base import OperatorSettings
from grse_graph.output import output_console
from grse_graph.training.config import TrainConfig
from grse_graph.training.demo import DEMO_ACTOR_MAX_TOKENS, learning_config
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.progress import ProgressEvent
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from grse_graph.training.session import load_training_task, open_endpoints

DIAGNOSIS_STATUSES = ("accepted", "repaired", "dropped")


class RequestProfile(BaseModel):
    """How one benchmarked iteration makes its requests.

    ``llm`` are dotted `load_config` overrides (``"critic.structured_method"``), ``train``
    updates of the `TrainConfig` and ``grse`` of its GRSE section; empty means the project's
    defaults.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    llm: dict[str, object] = Field(default_factory=dict)
    train: dict[str, object] = Field(default_factory=dict)
    grse: dict[str, object] = Field(default_factory=dict)


TODAY = RequestProfile(
    name="today",
    description="commit 13618e1's requests (its llama-cpp-python engine is gone): function "
    "calling for every structured role, the critic shown the per-agent narrowed schema, "
    "critic cap 900",
    llm={
        **{f"{role}.structured_method": "function_calling" for role in ("critic", "optimizer")},
        "critic.schema_narrowing": "per_agent",
    },
    train={"first_agent_n": True, "concurrency": 4},
    grse={
        "critic_max_tokens": 900,
        "aggregate_max_tokens": DEFAULT_AGGREGATE_MAX_TOKENS,
        "operators": OperatorSettings(),
    },
)
DEFAULT = RequestProfile(
    name="default", description="the project's defaults (the demo's CPU-sized caps)"
)
INPUT_FIRST = RequestProfile(
    name="input-first",
    description="the defaults with the shared task input before each agent's role prompt",
    train={"prompt_layout": "input_first"},
)
PROFILES = {profile.name: profile for profile in (TODAY, DEFAULT, INPUT_FIRST)}


def custom_profile(assignments: list[str]) -> RequestProfile:
    """A profile from ``section.key=value`` strings (section llm, train or grse); values are
    read as JSON when they parse (numbers, booleans), as text otherwise."""
    sections: dict[str, dict[str, object]] = {"llm": {}, "train": {}, "grse": {}}
    for assignment in assignments:
        key, separator, raw = assignment.partition("=")
        section, _, field = key.partition(".")
        if not separator or section not in sections or not field:
            raise SystemExit(f"--custom {assignment!r}: expected llm|train|grse.KEY=VALUE")
        try:
            value: object = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        sections[section][field] = value
    return RequestProfile(
        name="custom", description=f"defaults with {', '.join(assignments)}", **sections
    )


class StageClock:
    """Wall seconds per training stage, from the graph's progress events (a stage lasts until
    the next one starts or the iteration ends)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._current: tuple[str, float] | None = None

    def __call__(self, event: ProgressEvent) -> None:
        now = time.monotonic()
        if self._current is not None and event.kind != "unit_done":
            stage, started = self._current
            self.seconds[stage] = self.seconds.get(stage, 0.0) + now - started
            self._current = None
        if event.kind == "stage_started":
            self._current = (event.stage, now)

    def rollouts_and_critic(self) -> float:
        """The seconds of the group rollouts and the critic (what G changes; validation out)."""
        return self.seconds.get("rollouts", 0.0) + self.seconds.get("critic", 0.0)


def group_size_profile(size: int) -> RequestProfile:
    """The defaults at group size `size`."""
    return RequestProfile(
        name=f"G={size}", description=f"the defaults, G = {size}", grse={"group_size": size}
    )


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


def profile_configs(
    profile: RequestProfile, base: TrainConfig, model: str
) -> tuple[LLMConfig, TrainConfig]:
    """The model-role and training configuration a profile runs with."""
    llm = load_config(overrides={"engine.model": model, **profile.llm})
    method = base.method.model_copy(update=profile.grse)
    return llm, base.model_copy(update={**profile.train, "method": method})


def run_profile(
    profile: RequestProfile, llm: LLMConfig, config: TrainConfig, folder: Path, console: Console
) -> dict[str, Any]:
    """One iteration on a fresh engine; returns the measurements."""
    console.print(f"[bold]{profile.name}[/bold]: {profile.description}")
    with open_endpoints(llm, engine_log=folder / "engine.log") as endpoints:
        recorder = IntervalRecorder()
        clock = StageClock()
        engine = endpoints.engine
        engine_before = endpoints.prompt_eval_stats()
        deps = TrainingDeps(
            task=load_training_task(config),
            provider=RecordingProvider(endpoints.roles, recorder),
            config=config,
            run=RunFolder(folder),
            usage=lambda: endpoints.ledger.report().model_dump(mode="json"),
            on_progress=clock,
        )
        started = time.monotonic()
        asyncio.run(run_training(deps))
        wall = time.monotonic() - started
        engine_stats: PromptEvalStats | None = None
        if engine is not None:
            engine_stats = endpoints.prompt_eval_stats() - engine_before
        engine_name = (
            " + ".join(f"{e.engine_name} ({model})" for model, e in endpoints.engines.items())
            or "remote"
        )
        report = endpoints.ledger.report()
    critiques = RunFolder(folder).credits(CritiqueRecord).read()
    invalid = sum(
        1
        for record in critiques
        if record.result is None or record.result.diagnosis_error is not None
    )
    counts = [record.result.counts for record in critiques if record.result is not None]
    diagnoses = tuple(sum(getattr(c, status) for c in counts) for status in DIAGNOSIS_STATUSES)
    console.print(f"  {wall:.0f} s on {engine_name}, run folder {folder}")
    return {
        "engine": engine_name,
        "wall": wall,
        "rollouts_critic": clock.rollouts_and_critic(),
        "busy": recorder.busy_seconds(),
        "usage": report,
        "stats": engine_stats,
        "critic_units": len(critiques),
        "critic_invalid": invalid,
        "diagnoses": diagnoses,
    }


def print_table(
    results: dict[str, dict[str, Any]], args: argparse.Namespace, console: Console, seed: int
) -> None:
    """One column per profile."""
    table = Table(
        title=f"one GRSE iteration (G=4), task {args.task}, {args.questions} questions, "
        f"|V|={args.validation}, model {args.model}, seed {seed}"
    )
    table.add_column("measure")
    for name in results:
        table.add_column(name, justify="right")

    def row(label: str, fn: Any) -> None:
        table.add_row(label, *(fn(r) for r in results.values()))

    row("engine", lambda r: r["engine"])
    row("wall time (s)", lambda r: f"{r['wall']:.1f}")
    row("rollouts + critic (s)", lambda r: f"{r['rollouts_critic']:.1f}")
    row("engine busy share", lambda r: f"{r['busy'] / r['wall']:.0%}")
    row(
        "prompt tokens computed / from prefix cache",
        lambda r: (
            f"{r['stats'].evaluated_prompt_tokens} / {r['stats'].reused_prompt_tokens}"
            if r["stats"] is not None
            else "n/a"
        ),
    )
    row(
        "engine prompt / generation time (s)",
        lambda r: (
            f"{r['stats'].prompt_eval_ms / 1000:.0f} / {r['stats'].generation_ms / 1000:.0f}"
            if r["stats"] is not None
            else "n/a"
        ),
    )
    for role in ("actor", "critic", "optimizer"):
        row(
            f"{role}: calls / prompt / completion tokens",
            lambda r, role=role: (
                f"{r['usage'].role(role).calls} / {r['usage'].role(role).prompt_tokens} / "
                f"{r['usage'].role(role).completion_tokens}"
            ),
        )
    row(
        "critic outputs invalid / groups",
        lambda r: f"{r['critic_invalid']} / {r['critic_units']}",
    )
    row("diagnoses accepted / repaired / dropped", lambda r: " / ".join(map(str, r["diagnoses"])))
    row(
        "structured runaway stops",
        lambda r: str(sum(r["usage"].role(role).runaway_stops for role in ("critic", "optimizer"))),
    )
    first = next(iter(results.values()))
    row("wall time vs first profile", lambda r: f"{first['wall'] / r['wall']:.2f}x faster")
    row(
        "rollouts + critic vs first profile",
        lambda r: f"{r['rollouts_critic'] / first['rollouts_critic']:.2f}x the time",
    )
    console.print(table)


def print_summary(runs: dict[int, dict[str, dict[str, Any]]], console: Console) -> None:
    """Wall time per seed and profile, the sums, and each profile's sum against the first's."""
    names = list(next(iter(runs.values())))
    table = Table(title=f"wall time (s) over {len(runs)} seeds")
    table.add_column("seed")
    for name in names:
        table.add_column(name, justify="right")
    for seed, results in runs.items():
        table.add_row(str(seed), *(f"{results[name]['wall']:.1f}" for name in names))

    def summed(measure: str) -> dict[str, Any]:
        return {name: sum(results[name][measure] for results in runs.values()) for name in names}

    totals, invalid, units = summed("wall"), summed("critic_invalid"), summed("critic_units")
    table.add_row("sum", *(f"{totals[name]:.1f}" for name in names))
    first = totals[names[0]]
    table.add_row("vs first profile", *(f"{first / totals[name]:.2f}x faster" for name in names))
    table.add_row(
        "critic outputs invalid / groups", *(f"{invalid[name]} / {units[name]}" for name in names)
    )
    console.print(table)


def main() -> None:
    """Run the chosen profiles and print the comparison."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--task", default="demo")
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--validation", type=int, default=2)
    parser.add_argument("--compare", action="store_true", help="profiles today,default")
    parser.add_argument(
        "--group-sizes",
        default=None,
        help="comma list of G: the defaults at each group size (e.g. 1,4), same questions",
    )
    parser.add_argument("--profiles", default="default", help=f"comma list of {sorted(PROFILES)}")
    parser.add_argument(
        "--custom",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="add a profile 'custom': the defaults with these overrides (llm.critic."
        "structured_method=json_prompt, train.prompt_layout=input_first, grse.critic_max_tokens"
        "=600); repeatable",
    )
    parser.add_argument(
        "--seeds",
        default="0",
        help="comma list of training seeds; each runs every profile (default: 0)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds {args.seeds!r}: expected a comma list of integers")
    profiles = dict(PROFILES)
    names = ["today", "default"] if args.compare else args.profiles.split(",")
    if args.group_sizes:
        sizes = [int(size) for size in args.group_sizes.split(",")]
        profiles |= {f"G={size}": group_size_profile(size) for size in sizes}
        names = [f"G={size}" for size in sizes]
    if args.custom:
        profiles["custom"] = custom_profile(args.custom)
        names.append("custom")
    unknown = [name for name in names if name not in profiles]
    if unknown:
        parser.error(f"unknown profile(s) {', '.join(unknown)}; known: {', '.join(profiles)}")
    console = output_console()
    out = args.out or Path(tempfile.mkdtemp(prefix="grse-iteration-bench-"))
    base = learning_config(
        task=args.task,
        iterations=1,
        group_size=4,
        batch_size=args.questions,
        validation_size=args.validation,
        validation_repeats=1,
    ).model_copy(update={"actor_max_tokens": DEMO_ACTOR_MAX_TOKENS})
    runs: dict[int, dict[str, dict[str, Any]]] = {}
    for seed in seeds:
        seeded = base.model_copy(update={"seed": seed})
        # Seed 0 alone keeps the folder layout of a single run (OUT/PROFILE).
        folder = out if seeds == [0] else out / f"seed-{seed}"
        results: dict[str, dict[str, Any]] = {}
        for name in names:
            llm, config = profile_configs(profiles[name], seeded, args.model)
            results[name] = run_profile(profiles[name], llm, config, folder / name, console)
        print_table(results, args, console, seed)
        runs[seed] = results
    if len(runs) > 1:
        print_summary(runs, console)


if __name__ == "__main__":
    main()
