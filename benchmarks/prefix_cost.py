"""What does a skill library cost at evaluation time? The same questions, greedy, on one engine:
first with the given libraries, then with empty ones.

    python benchmarks/prefix_cost.py [--model default] [--limit 24] [--out DIR]
    python benchmarks/prefix_cost.py --library retriever=DIR --library reasoner=DIR ...

`--library AGENT=DIR` may repeat for an agent: its libraries are merged. The default is six
skills, three per agent: the demo's planted pack plus `skills/examples/hotpotqa`'s
comparison-evidence (retriever) and short-answer-format (reasoner). Both evaluations run on the
demo test split with the demo's actor cap, each starting from cleared prefix caches.

Printed per library: wall time, mean reward, model passes, prompt tokens sent, prompt tokens the
engine computed and the seconds it spent on them, tokens generated and the seconds spent on them
(the engine's own timing lines, priming requests included), and prefix reloads (requests whose
agent prefix had lost its slot to another one; more than none means too few `n_parallel` slots).
Then the ratio of each, library over empty. The skills sit in every agent's fixed prefix, which
is computed once per engine slot, so the computed prompt and its seconds should barely grow with
the library; generation grows with whatever the skills make the agents write.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from grse_graph.cli.eval_cmd import parse_library_option
from grse_graph.evaluation import run_evaluation
from grse_graph.llm import SamplingSettings, load_config
from grse_graph.output import output_console
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.registry import load_task
from grse_graph.team import default_team
from grse_graph.training.demo import demo_llm_overrides
from grse_graph.training.session import Endpoints, open_endpoints

REPOSITORY = Path(__file__).resolve().parents[1]
PLANTED = REPOSITORY / "grse_graph" / "tasks" / "demo_data" / "planted"
EXAMPLES = REPOSITORY / "skills" / "examples" / "hotpotqa"
DEFAULT_LIBRARIES = (
    f"retriever={PLANTED / 'retriever' / 'skills'}",
    f"retriever={EXAMPLES / 'retriever'}:comparison-evidence",
    f"reasoner={PLANTED / 'reasoner' / 'skills'}",
    f"reasoner={EXAMPLES / 'reasoner'}:short-answer-format",
)
"""Six skills, three per agent (`DIR:NAME` keeps one skill of a folder)."""


class LibraryCost(BaseModel):
    """One evaluation's measurements."""

    label: str
    skills: int
    wall_s: float
    reward: float
    completions: int
    prompt_tokens_sent: int
    prompt_tokens_computed: int
    prompt_s: float
    generated_tokens: int
    generation_s: float
    prefix_reloads: int


def load_merged(values: Sequence[str]) -> dict[str, SkillLibrary]:
    """`AGENT=DIR[:NAME]` values -> one library per agent, merging an agent's folders
    (`:NAME` keeps only that skill of the folder)."""
    libraries: dict[str, SkillLibrary] = {}
    for value in values:
        agent, folder = parse_library_option(value)
        folder_text, _, only = str(folder).partition(":")
        loaded = SkillLibrary.load(Path(folder_text), agent=agent)
        merged = libraries.get(agent, SkillLibrary.empty(agent))
        for name in [only] if only else loaded.names():
            merged = merged.add(loaded.get(name))
        libraries[agent] = merged
    return libraries


def measure(
    endpoints: Endpoints,
    label: str,
    libraries: dict[str, SkillLibrary],
    *,
    limit: int,
    out: Path,
    console: Console,
) -> LibraryCost:
    """Evaluate the demo test split with `libraries` and read what it cost."""
    task = load_task("demo")
    team = default_team(task, libraries)
    ledger_before = endpoints.ledger.report().total
    engine_before = endpoints.prompt_eval_stats()
    started = time.monotonic()
    summary = asyncio.run(
        run_evaluation(
            task,
            "test",
            team,
            endpoints.roles,
            out / label,
            limit=limit,
            sampling=SamplingSettings.greedy(),
            console=console,
        )
    )
    wall = time.monotonic() - started
    sent = endpoints.ledger.report().total - ledger_before
    engine = endpoints.prompt_eval_stats() - engine_before
    return LibraryCost(
        label=label,
        skills=sum(len(library) for library in libraries.values()),
        wall_s=wall,
        reward=summary.overall.reward,
        completions=engine.completions,
        prompt_tokens_sent=sent.prompt_tokens,
        prompt_tokens_computed=engine.evaluated_prompt_tokens,
        prompt_s=engine.prompt_eval_ms / 1000,
        generated_tokens=engine.generated_tokens,
        generation_s=engine.generation_ms / 1000,
        prefix_reloads=engine.prefix_reloads,
    )


COLUMNS: dict[str, str] = {
    "skills": "skills",
    "wall_s": "wall s",
    "reward": "reward",
    "completions": "model passes",
    "prompt_tokens_sent": "prompt tokens sent",
    "prompt_tokens_computed": "prompt tokens computed",
    "prompt_s": "prompt s",
    "generated_tokens": "tokens generated",
    "generation_s": "generation s",
    "prefix_reloads": "prefix reloads",
}


def comparison_table(library: LibraryCost, empty: LibraryCost) -> Table:
    """One row per measure: the library, the empty libraries and their ratio."""
    table = Table(title="evaluation cost: library vs empty (same questions, one engine)")
    for heading in ("", "library", "empty", "library / empty"):
        table.add_column(heading, justify="right")
    for field, heading in COLUMNS.items():
        mine, base = getattr(library, field), getattr(empty, field)
        ratio = f"{mine / base:.2f}x" if base else "n/a"
        table.add_row(heading, _cell(mine), _cell(base), ratio)
    return table


def _cell(value: float | int) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:.3f}"


def main() -> None:
    """Measure the library, then the empty libraries, and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--library", action="append", default=None, metavar="AGENT=DIR[:NAME]")
    parser.add_argument("--limit", type=int, default=24, help="first N demo test questions")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    console = output_console()
    out = args.out or Path(tempfile.mkdtemp(prefix="grse-prefix-cost-"))
    libraries = load_merged(args.library or DEFAULT_LIBRARIES)
    llm = load_config(overrides=demo_llm_overrides(args.model))
    with open_endpoints(llm, engine_log=out / "engine.log") as endpoints:
        # The library first: whatever the engine gains from having run before goes to the
        # empty libraries, against the ratio.
        library = measure(
            endpoints, "library", libraries, limit=args.limit, out=out, console=console
        )
        empty = {agent: SkillLibrary.empty(agent) for agent in libraries}
        baseline = measure(endpoints, "empty", empty, limit=args.limit, out=out, console=console)
    console.print(comparison_table(library, baseline))
    (out / "prefix_cost.json").write_text(
        "[" + ",".join(row.model_dump_json() for row in (library, baseline)) + "]\n"
    )
    console.print(f"run folder {out}")


if __name__ == "__main__":
    main()
