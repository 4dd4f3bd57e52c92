"""Benchmark the structured-output methods on the project's real structured requests.

For each engine available (xllamacpp always; llama-server when
`grse_graph.llm.engine.find_llama_server` finds one) it starts the embedded engine with the
chosen model and runs every method that engine accepts on three requests: a GRSE critic
request (built by the critic's own payload builder from a recorded run's rollouts when one
exists, by default ``/tmp/bench-methods/grse``, else from a small synthetic group), an
aggregation merge (``MergedDirection``) and an operator induction (``SkillDraft``). Replies are
streamed under the repetition watch. Per method it prints wall time, completion tokens (the
engine's own count from its log), tokens/s, valid first try / after repair / failed, and
runaway stops.

    flock /tmp/grse-engine.lock python benchmarks/structured.py --model default --repeats 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import EngineName, EngineSettings, StructuredMethod, load_config
from grse_graph.llm.engine import LocalEngine, find_llama_server
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.structured import METHODS, astructured_outcome
from grse_graph.methods.grse import prompts
from grse_graph.methods.grse.checks import CheckContext
from grse_graph.methods.grse.critic import GroupCritic, group_vocabulary
from grse_graph.methods.grse.critic_schema import critic_output_schema
from grse_graph.methods.operators import prompts as operator_prompts
from grse_graph.methods.operators.schema import SkillDraft
from grse_graph.methods.plan import MergedDirection
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.demo import load_demo
from grse_graph.team.rollout import Rollout

# The grammar-free and cheaper methods first, so a run cut short still measures them.
DEFAULT_ORDER: list[StructuredMethod] = [
    "json_prompt",
    "json_object",
    "json_schema",
    "json_object_schema",
    "json_grammar",
    "function_calling",
]
_UNSUPPORTED: dict[str, frozenset[str]] = {}
"""Methods an engine rejects (none of llama.cpp's server's)."""


@dataclass(frozen=True)
class Request:
    """One structured request of the project: its name, schema and messages."""

    name: str
    schema: type[BaseModel]
    messages: list[BaseMessage]


@dataclass
class Tally:
    """What one (engine, method) did over all requests and repeats."""

    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generation_ms: float = 0.0
    first_try: int = 0
    after_repair: int = 0
    failed: int = 0
    runaway_stops: int = 0
    problems: list[str] = field(default_factory=list)


def critic_request(run_dir: Path, *, narrowed: bool = True) -> Request:
    """The critic request of the first recorded group with a failure (from ``run_dir``), with
    the schema narrowed to the group's names (what a grammar gets) or the plain one (what a
    prompt shows)."""
    task = load_demo()
    questions = {q.id: q for split in task.splits().values() for q in split}
    rows = [json.loads(line) for line in (run_dir / "rollouts.jsonl").open(encoding="utf-8")]
    groups: dict[str, list[Rollout]] = {}
    for row in rows:
        groups.setdefault(row["question_id"], []).append(Rollout.model_validate(row["rollout"]))
    question_id, rollouts = next(
        (qid, group) for qid, group in groups.items() if any(r.reward < 1.0 for r in group)
    )
    rewards = [r.reward for r in rollouts]
    mean = sum(rewards) / len(rewards)
    spread = (sum((x - mean) ** 2 for x in rewards) / len(rewards)) ** 0.5 or 1.0
    advantages = [(x - mean) / spread for x in rewards]
    library_root = run_dir / "libraries" / "iter_0"
    agents = sorted({step.agent for r in rollouts for step in r.steps})
    libraries = {agent: SkillLibrary.load(library_root / agent, agent=agent) for agent in agents}
    critic = GroupCritic(provider=None)  # type: ignore[arg-type]  # payload only, no call
    payload = critic.payload(questions[question_id], libraries, rollouts, advantages)
    names = {agent: library.names() for agent, library in libraries.items()}
    vocabulary = group_vocabulary(CheckContext.build(rollouts, names)) if narrowed else None
    schema = critic_output_schema(True, vocabulary)
    messages: list[BaseMessage] = [
        SystemMessage(critic.system_prompt),
        HumanMessage(prompts.CRITIC_USER.format(payload=payload.text)),
    ]
    label = "critic" if narrowed else "critic-plain"
    return Request(f"{label} ({question_id}, {payload.size_chars} chars)", schema, messages)


def aggregation_request() -> Request:
    """A merge of three credits for one skill (the optimizer's aggregation call)."""
    credits = "\n".join(
        f"- utility {u:+.1f}, verdict {v}: {e}"
        for u, v, e in [
            (0.6, "helped", "r2.s1 quoted the passage naming the museum's opening year"),
            (-0.4, "harmful", "r1.s1 stopped after the first passage and missed the second hop"),
            (0.2, "neutral", "r3.s2 followed the skill but the answer needed a date, not a name"),
        ]
    )
    user = prompts.MERGE_USER.format(
        agent="retriever",
        skill_id="two-hop-lookup",
        utility=0.13,
        n=3,
        body="1. Find the passage naming the entity.\n2. Follow its link to the second passage.",
        credits=credits,
    )
    return Request(
        "aggregation merge",
        MergedDirection,
        [SystemMessage(prompts.MERGE_SYSTEM), HumanMessage(user)],
    )


def operator_request() -> Request:
    """An induction of one new skill from a recurring failure (an operator call)."""
    system = operator_prompts.INDUCE_SYSTEM.format(max_words=120)
    user = operator_prompts.INDUCE_USER.format(
        agent="retriever",
        context="",
        guidance="",
        existing="(none)",
        support=2,
        problem=operator_prompts.FAILURE_TYPE_HINTS["evidence_missing"],
        evidence="- r1.s1: passed on the first passage only; the opening year was in passage 3\n"
        "- r4.s1: searched for the person, never for the museum the question named",
    )
    return Request("operator induce", SkillDraft, [SystemMessage(system), HumanMessage(user)])


async def run_method(
    roles: ModelRoles,
    engine: LocalEngine,
    method: StructuredMethod,
    requests: Sequence[Request],
    repeats: int,
) -> dict[str, Tally]:
    """Run ``method`` on every request ``repeats`` times, one at a time; a tally per request."""
    tallies = {request.name: Tally() for request in requests}
    for _ in range(repeats):
        for request in requests:
            tally = tallies[request.name]
            model = roles.chat("critic")
            before = engine.prompt_eval_stats()
            started = time.perf_counter()
            outcome = await astructured_outcome(
                model, request.schema, request.messages, method=method
            )
            tally.seconds += time.perf_counter() - started
            spent = engine.prompt_eval_stats() - before
            tally.prompt_tokens += spent.evaluated_prompt_tokens
            tally.completion_tokens += spent.generated_tokens
            tally.generation_ms += spent.generation_ms
            tally.runaway_stops += sum(bool(a.runaway) for a in outcome.attempts)
            if outcome.value is None:
                tally.failed += 1
                tally.problems.append(outcome.attempts[-1].problem[:200])
            elif len(outcome.attempts) == 1:
                tally.first_try += 1
            else:
                tally.after_repair += 1
    return tallies


HEADER = (
    f"{'method':<20}{'request':<22}{'wall s':>8}{'prompt':>8}{'tokens':>8}{'tok/s':>7}"
    f"{'first':>7}{'repair':>7}{'failed':>7}{'runaway':>8}"
)


def row(method: str, request: str, tally: Tally) -> str:
    """One printed line of the table (tok/s: generated tokens over the engine's generation
    time, so prompt processing is not in it)."""
    rate = tally.completion_tokens / (tally.generation_ms / 1000) if tally.generation_ms else 0.0
    return (
        f"{method:<20}{request[:21]:<22}{tally.seconds:8.1f}{tally.prompt_tokens:8d}"
        f"{tally.completion_tokens:8d}{rate:7.1f}{tally.first_try:7d}{tally.after_repair:7d}"
        f"{tally.failed:7d}{tally.runaway_stops:8d}"
    )


def total(tallies: Sequence[Tally]) -> Tally:
    """The sum of several tallies."""
    result = Tally()
    for tally in tallies:
        result.seconds += tally.seconds
        result.prompt_tokens += tally.prompt_tokens
        result.completion_tokens += tally.completion_tokens
        result.generation_ms += tally.generation_ms
        result.first_try += tally.first_try
        result.after_repair += tally.after_repair
        result.failed += tally.failed
        result.runaway_stops += tally.runaway_stops
    return result


def engines_available(settings: EngineSettings) -> list[EngineName]:
    """xllamacpp, plus llama-server when an executable is found."""
    found: list[EngineName] = ["xllamacpp"]
    if find_llama_server(settings) is not None:
        found.append("llama-server")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default", help="engine model (default, small, medium)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=1024, help="reply cap (embedded critic)")
    parser.add_argument("--methods", nargs="*", default=DEFAULT_ORDER, choices=list(METHODS))
    parser.add_argument("--engines", nargs="*", default=None, choices=["xllamacpp", "llama-server"])
    parser.add_argument("--run-dir", type=Path, default=Path("/tmp/bench-methods/grse"))
    parser.add_argument(
        "--requests",
        nargs="*",
        default=["critic", "critic-plain", "aggregation", "operator"],
        choices=["critic", "critic-plain", "aggregation", "operator"],
    )
    args = parser.parse_args()

    builders = {
        "critic": lambda: critic_request(args.run_dir),
        "critic-plain": lambda: critic_request(args.run_dir, narrowed=False),
        "aggregation": aggregation_request,
        "operator": operator_request,
    }
    requests = [builders[name]() for name in args.requests]
    print(f"model {args.model}, repeats {args.repeats}, cap {args.max_tokens}, streamed replies")
    for request in requests:
        print(f"  request: {request.name} -> {request.schema.__name__}")
    base = EngineSettings(model=args.model, threads=args.threads)
    for engine_name in args.engines or engines_available(base):
        settings = base.model_copy(update={"engine": engine_name})
        env = {"GRSE_CRITIC_MAX_TOKENS": str(args.max_tokens), "GRSE_CRITIC_STRUCTURED_STREAM": "1"}
        with LocalEngine(settings) as engine:
            roles = ModelRoles(load_config(env=env), UsageLedger(), engine_url=engine.base_url)
            roles.chat("critic", max_tokens=4).invoke([HumanMessage("Hi")])  # warm-up
            print(f"\nengine {engine.engine_name}")
            print(HEADER)
            for method in args.methods:
                if method in _UNSUPPORTED.get(engine.engine_name, frozenset()):
                    print(f"{method:<20}(not accepted by {engine.engine_name})")
                    continue
                tallies = asyncio.run(run_method(roles, engine, method, requests, args.repeats))
                for name, tally in tallies.items():
                    print(row(method, name.split(" (")[0], tally), flush=True)
                    for problem in tally.problems:
                        print(f"    failed: {problem}")
                print(row(method, "all", total(list(tallies.values()))), flush=True)
            usage = roles.ledger.report().role("critic")
            print(
                f"ledger: {usage.calls} calls, {usage.failures} failures, "
                f"{usage.runaway_stops} runaway stops, {usage.calls_without_usage} without usage"
            )


if __name__ == "__main__":
    main()
