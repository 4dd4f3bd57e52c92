"""Is the critic right? Replay a run's recorded groups to a critic and score the signs of its
credits against the skills' effects measured by execution.

    python benchmarks/critic_signs.py RUN [--model default] [--model medium] [--out FILE.json]
    python benchmarks/critic_signs.py RUN --config critic.toml [--concurrency 8]
    python benchmarks/critic_signs.py RUN --effects AUDIT.json [--iteration 1] [--limit N]
    python benchmarks/critic_signs.py RUN --recorded-only      # no model: the run's own critic

RUN is a `grse train` or `grse demo` run folder of GRSE. The groups of iteration `--iteration`
(default 1, the first update) are every question's G rollouts the run's critic judged
(critiques.jsonl, rollouts.jsonl), with the libraries they ran under (libraries/iter_<t-1>).
Each critic gets exactly the request the run's critic got (`GrseMethod.credit`: payload, schema,
attribution checks and repair round, with the run's critic settings), so the benchmark needs
the recorded rollouts, not a capable actor.

The measured effects are the run's probe of the same libraries (probe_results.jsonl, written
under probe credit, as `grse demo` does), or a `grse skills audit` of them (`--effects`: its
audit.json, its folder, or the `--json` list). A skill's verdict comes from its interval:
helps (above 0), hurts (below 0) or no effect. A critic's u1 for a skill is the mean utility
of its credits over the groups (as the plan aggregates them; silent: no group credited the
skill), per replay; the sign is scored as Table 5 scores it against planted kinds
(`PlantedSkillOutcome.sign_correct`, `separation`), with "helps" as helpful and "hurts" as
harmful.

Critics: `--model NAME` (repeatable) is the embedded engine with that model in the critic role
(default, medium, small or a .gguf path); `--config TOML` (repeatable) is the `[critic]`
section of a grse model config, e.g. a remote OpenAI-compatible endpoint. Without either,
`--model default`. The run's own critic (its recorded credits) is always scored first, at no
cost. Every call goes through the package's one client path (`ModelRoles`) and is counted in
its usage ledger; the table per critic is printed on stdout, progress on stderr, and with
`--out` every score is written as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from rich.console import Console
from rich.table import Table

from grse_graph.errors import GrseError
from grse_graph.llm import LLMConfig, load_config
from grse_graph.methods.aggregation import bucket_by_skill
from grse_graph.methods.base import CreditInputs, CreditUnit
from grse_graph.methods.grse.method import CritiqueRecord, GrseMethod, GrseSettings
from grse_graph.output import output_console
from grse_graph.probes.effects import EffectVerdict
from grse_graph.probes.report import AUDIT_FILE, AuditRecord, AuditReport, interval_text, signed
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team.rollout import Rollout
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.nodes.credit import CREDIT_FAILURES
from grse_graph.training.repair import PlantedSkillOutcome, separation
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.session import load_training_task, open_endpoints
from grse_graph.validation_text import describe_validation_error

KINDS: dict[EffectVerdict, Literal["helpful", "harmful"]] = {
    "helps": "helpful",
    "hurts": "harmful",
}
"""A measured verdict as the kind Table 5 scores a sign against ("no effect": not scored)."""

RECORDED = "recorded (the run's own critic)"

Sign = Literal["right", "wrong", "silent", "zero", "unscored"]


class SignError(GrseError):
    """The run folder, the effects or the options cannot be scored (one line)."""


# -- the recorded run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One recorded group: the run's credit record, its question and its rollouts in order."""

    record: CritiqueRecord
    question: TaskQuestion
    rollouts: list[Rollout]


class MeasuredEffects(BaseModel):
    """The effects a critic is scored against: one record per probed skill, where they came
    from and the level of their intervals (None: the file does not say)."""

    source: str
    confidence: float | None
    records: list[AuditRecord]


@dataclass(frozen=True)
class Recorded:
    """What a replay reads from a run folder: its config, task, libraries, groups and effects."""

    run: RunFolder
    config: TrainConfig
    task: Task
    iteration: int
    libraries: dict[str, SkillLibrary]
    groups: list[Group]
    effects: MeasuredEffects

    def skills(self) -> list[tuple[str, str]]:
        """Every (agent, skill) of the replayed libraries, in library order."""
        return [(agent, name) for agent, lib in self.libraries.items() for name in lib.names()]


def _grse_settings(config: TrainConfig, where: Path) -> GrseSettings:
    if not isinstance(config.method, GrseSettings):
        raise SignError(
            f"{where}: a {config.method.name} run; the critic's groups are GRSE's (method grse)"
        )
    return config.method


def _libraries(run: RunFolder, config: TrainConfig, iteration: int) -> dict[str, SkillLibrary]:
    """The libraries iteration `iteration` ran under: those saved after iteration t - 1."""
    root = run.path / "libraries" / f"iter_{iteration - 1}"
    if not root.is_dir():
        raise SignError(f"{root}: no such folder (the libraries iteration {iteration} ran under)")
    return {
        folder.name: run.load_library(run.relative(folder), folder.name, config.library_limit)
        for folder in sorted(root.iterdir())
        if folder.is_dir()
    }


def _groups(
    run: RunFolder,
    task: Task,
    iteration: int,
    libraries: Mapping[str, SkillLibrary],
    limit: int | None,
) -> list[Group]:
    questions = {q.id: q for split in ("train", "validation") for q in task.split(split)}
    hashes = {agent: lib.content_hash() for agent, lib in libraries.items()}
    records = [r for r in run.credits(CritiqueRecord).read() if r.iteration == iteration and r.kept]
    if not records:
        raise SignError(
            f"{run.path}: no groups of iteration {iteration} in critiques.jsonl (nothing to replay)"
        )
    groups = []
    for record in records[:limit]:
        question = questions.get(record.question_id)
        if question is None:
            raise SignError(
                f"{run.path}: question {record.question_id!r} is not in task {task.name}'s "
                "train or validation split (give the run's data with --data)"
            )
        rollouts = []
        for unit_id in record.rollout_ids:
            found = run.rollouts.get(unit_id)
            if found is None:
                raise SignError(f"{run.rollouts.path}: rollout {unit_id} is missing")
            differing = [a for a, h in found.library_hashes.items() if hashes.get(a, h) != h]
            if differing:
                raise SignError(
                    f"{run.rollouts.path}: rollout {unit_id} ran under other libraries than "
                    f"libraries/iter_{iteration - 1} (agent {differing[0]})"
                )
            rollouts.append(found.rollout)
        groups.append(Group(record=record, question=question, rollouts=rollouts))
    return groups


def _read_audit(path: Path) -> MeasuredEffects:
    """`--effects`: an audit folder, its audit.json, or the records `--json` printed."""
    file = path / AUDIT_FILE if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SignError(f"--effects {path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise SignError(f"--effects {file}: not a JSON file ({error})") from None
    try:
        if isinstance(data, list):
            records = TypeAdapter(list[AuditRecord]).validate_python(data)
            return MeasuredEffects(source=str(file), confidence=None, records=records)
        report = AuditReport.model_validate(data)
    except ValidationError as error:
        message = describe_validation_error(error)
        raise SignError(f"--effects {file}: not a skill audit ({message})") from None
    return MeasuredEffects(
        source=str(file), confidence=report.header.confidence, records=report.effects
    )


def _effects(
    run: RunFolder, iteration: int, audit: Path | None, libraries: Mapping[str, SkillLibrary]
) -> MeasuredEffects:
    if audit is not None:
        effects = _read_audit(audit)
    else:
        probe = run.probe_results.get(str(iteration))
        if probe is None:
            raise SignError(
                f"{run.path}: no probe results of iteration {iteration} (train with probe "
                "credit, or give --effects with a `grse skills audit` of its libraries)"
            )
        effects = MeasuredEffects(
            source=f"{run.probe_results.path} (iteration {iteration}, {probe.result.design})",
            confidence=probe.result.confidence,
            records=[AuditRecord.of(e) for e in probe.result.effects],
        )
    if not effects.records:
        raise SignError(f"{effects.source}: no skill effects in it")
    for record in effects.records:
        library = libraries.get(record.agent)
        if library is None or not library.has(record.skill):
            raise SignError(
                f"{effects.source}: {record.agent}/{record.skill} is not in the replayed "
                f"libraries (the effects were measured on other libraries)"
            )
    return effects


def load_recorded(
    path: Path,
    *,
    iteration: int = 1,
    limit: int | None = None,
    effects: Path | None = None,
    data: str | None = None,
) -> Recorded:
    """Read everything a replay needs from a run folder (no model is called). `SignError` or
    another `GrseError`, in one line, when the folder has no groups, no effects, or is not a
    GRSE run."""
    if iteration < 1:
        raise SignError(f"--iteration {iteration}: iterations count from 1")
    if limit is not None and limit < 1:
        raise SignError(f"--limit {limit}: give at least one group")
    run = RunFolder(path)
    config = run.read_config()
    _grse_settings(config, path)
    if data is not None:
        config = config.model_copy(update={"data": data})
    task = load_training_task(config)
    libraries = _libraries(run, config, iteration)
    groups = _groups(run, task, iteration, libraries, limit)
    measured = _effects(run, iteration, effects, libraries)
    return Recorded(run, config, task, iteration, libraries, groups, measured)


# -- scores ---------------------------------------------------------------------------------------


class SkillScore(BaseModel):
    """One skill's measured effect and a critic's u1 for it."""

    agent: str
    skill: str
    effect: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: EffectVerdict | None = Field(default=None, description="None: not probed")
    u1: list[float | None] = Field(description="per replay: mean credit utility over groups")
    credits: list[int] = Field(description="per replay: groups that credited the skill")
    u1_mean: float | None = Field(description="mean over the replays that credited the skill")
    sign: Sign = Field(
        description="right/wrong: u1_mean against the verdict; silent: no credit; zero: u1 = 0; "
        "unscored: no measured effect"
    )


class SignSummary(BaseModel):
    """Table 5's numbers against measured effects."""

    with_effect: int = Field(description="skills whose interval excludes 0 (M)")
    right: int
    wrong: int
    silent: int = Field(description="skills with an effect and no sign (no credit, or u1 = 0)")
    separation: float | None = Field(
        description="mean u1 of helpful minus mean u1 of harmful (None: a kind uncredited)"
    )


class CriticScore(BaseModel):
    """One critic's replays of the groups, scored."""

    critic: str
    endpoint: str
    replays: int
    groups: int
    failed_groups: list[int] = Field(description="per replay: groups whose critic call failed")
    errors: list[str] = Field(default_factory=list, description="the failed calls' errors")
    skills: list[SkillScore]
    summary: SignSummary
    per_replay: list[SignSummary]
    usage: dict[str, Any] | None = None
    wall_s: float = 0.0


class CriticSignsReport(BaseModel):
    """What `--out` writes: the run, the groups, the effects and every critic's score."""

    run: str
    iteration: int
    groups: list[str]
    effects_source: str
    confidence: float | None
    critics: list[CriticScore]


def _outcome(
    record: AuditRecord | None, agent: str, skill: str, u1: float | None
) -> PlantedSkillOutcome | None:
    """The skill as Table 5 scores it (kind from the measured verdict), or None without one."""
    if record is None or record.verdict not in KINDS:
        return None
    return PlantedSkillOutcome(agent=agent, skill=skill, kind=KINDS[record.verdict], u1=u1)


def _sign(outcome: PlantedSkillOutcome | None) -> Sign:
    if outcome is None:
        return "unscored"
    if outcome.u1 is None:
        return "silent"
    if outcome.sign_correct is None:
        return "zero"
    return "right" if outcome.sign_correct else "wrong"


def summarize(outcomes: Sequence[PlantedSkillOutcome]) -> SignSummary:
    """Right, wrong and silent signs and the separation of scored skills."""
    return SignSummary(
        with_effect=len(outcomes),
        right=sum(o.sign_correct is True for o in outcomes),
        wrong=sum(o.sign_correct is False for o in outcomes),
        silent=sum(o.sign_correct is None for o in outcomes),
        separation=separation(list(outcomes)),
    )


def replay_u1(
    records: Sequence[CritiqueRecord], libraries: Mapping[str, SkillLibrary]
) -> dict[tuple[str, str], list[float]]:
    """Per (agent, skill) of the libraries, the utilities its credits got over the groups."""
    credits = [c for r in records if r.result is not None for c in r.result.credits]
    buckets = bucket_by_skill(credits, lambda c: (c.agent, c.skill_id), libraries)
    return {key: [c.utility for c in items] for key, items in buckets.items()}


def score(
    critic: str,
    endpoint: str,
    replays: Sequence[Sequence[CritiqueRecord]],
    recorded: Recorded,
    *,
    usage: dict[str, Any] | None = None,
    wall_s: float = 0.0,
) -> CriticScore:
    """Score a critic's replays (one list of credit records per replay) against the effects."""
    if not replays:
        raise ValueError("score: no replay to score")
    effects = {(r.agent, r.skill): r for r in recorded.effects.records}
    utilities = [replay_u1(records, recorded.libraries) for records in replays]
    rows: list[SkillScore] = []
    outcomes: list[PlantedSkillOutcome] = []
    per_replay: list[list[PlantedSkillOutcome]] = [[] for _ in replays]
    for agent, skill in recorded.skills():
        found = [u.get((agent, skill), []) for u in utilities]
        u1 = [fmean(values) if values else None for values in found]
        credited = [value for value in u1 if value is not None]
        mean = fmean(credited) if credited else None
        record = effects.get((agent, skill))
        outcome = _outcome(record, agent, skill, mean)
        if outcome is not None:
            outcomes.append(outcome)
            for index, value in enumerate(u1):
                replayed = _outcome(record, agent, skill, value)
                assert replayed is not None
                per_replay[index].append(replayed)
        rows.append(
            SkillScore(
                agent=agent,
                skill=skill,
                effect=record.effect if record else None,
                low=record.low if record else None,
                high=record.high if record else None,
                verdict=record.verdict if record else None,
                u1=u1,
                credits=[len(values) for values in found],
                u1_mean=mean,
                sign=_sign(outcome),
            )
        )
    failed = [[r for r in records if r.error is not None] for records in replays]
    return CriticScore(
        critic=critic,
        endpoint=endpoint,
        replays=len(replays),
        groups=len(replays[0]),
        failed_groups=[len(f) for f in failed],
        errors=[r.error for f in failed for r in f if r.error is not None],
        skills=rows,
        summary=summarize(outcomes),
        per_replay=[summarize(o) for o in per_replay],
        usage=usage,
        wall_s=wall_s,
    )


def recorded_score(recorded: Recorded) -> CriticScore:
    """The run's own critic: its recorded credits of the same groups, scored (no call)."""
    return score(RECORDED, "run folder", [[g.record for g in recorded.groups]], recorded)


# -- replay ---------------------------------------------------------------------------------------

Progress = Callable[[str], None]


def critic_only(llm: LLMConfig) -> LLMConfig:
    """`llm` with every role on the critic's endpoint: the replay calls only the critic, so no
    engine starts for another role (an embedded critic's model becomes the engine's)."""
    critic = llm.critic
    if not critic.embedded:
        return llm.model_copy(update={"actor": critic, "optimizer": critic})
    engine = llm.engine.model_copy(update={"model": llm.embedded_model("critic")})
    critic = critic.model_copy(update={"engine_model": None})
    return llm.model_copy(
        update={"actor": critic, "critic": critic, "optimizer": critic, "engine": engine}
    )


def embedded_critic(model: str) -> LLMConfig:
    """The role config with the embedded engine's `model` in the critic role (`--model`)."""
    return load_config(
        overrides={
            "engine.model": model,
            "critic.base_url": "embedded",
            "critic.engine_model": model,
        }
    )


def critic_label(llm: LLMConfig) -> str:
    """How a critic is named in the tables: its embedded model or its served model."""
    if llm.critic.embedded:
        return f"embedded {llm.embedded_model('critic')}"
    return f"{llm.critic.model} at {llm.critic.base_url}"


def replay_method(
    recorded: Recorded, *, critic_max_tokens: int | None = None, payload_tokens: int | None = None
) -> GrseMethod:
    """GRSE with the run's critic settings (`critic_max_tokens`, `payload_tokens` over them)."""
    settings = _grse_settings(recorded.config, recorded.run.path)
    update: dict[str, Any] = {}
    if critic_max_tokens is not None:
        update["critic_max_tokens"] = critic_max_tokens
    if payload_tokens is not None:
        update["payload_limits"] = settings.payload_limits.model_copy(
            update={"max_tokens": payload_tokens}
        )
    return GrseMethod(settings.model_copy(update=update))


async def replay_groups(
    recorded: Recorded,
    deps: TrainingDeps,
    method: GrseMethod,
    *,
    replays: int,
    concurrency: int,
    progress: Progress | None = None,
) -> list[list[CritiqueRecord]]:
    """Every group sent to the critic `replays` times, as the run's credit stage sends it; a
    failed call (unparsable, refused) is that group's failure record, as in training."""
    team = deps.team_spec()
    gate = asyncio.Semaphore(concurrency)
    total = len(recorded.groups)

    async def one(replay: int, index: int, group: Group) -> CritiqueRecord:
        record = group.record
        unit = CreditUnit(
            unit_id=record.unit_id, question_id=record.question_id, rollout_ids=record.rollout_ids
        )
        inputs = CreditInputs(
            iteration=recorded.iteration,
            question=group.question,
            libraries=recorded.libraries,
            rollouts=group.rollouts,
            provider=deps.provider,
            team=team,
            task=deps.task,
        )
        async with gate:
            started = time.monotonic()
            try:
                result = await method.credit(unit, inputs)
            except CREDIT_FAILURES as failure:
                error = f"{type(failure).__name__}: {failure}"
                result = method.failed_record(unit, inputs, error)
            elapsed = time.monotonic() - started
        if progress is not None:
            said = (
                f"failed: {result.error.splitlines()[0][:120]}"
                if result.error is not None
                else f"{len(result.result.credits) if result.result else 0} credit(s)"
            )
            progress(
                f"replay {replay}/{replays} group {index}/{total} ({record.question_id}): "
                f"{said}, {elapsed:.1f} s"
            )
        return result

    found = []
    for replay in range(1, replays + 1):
        jobs = [one(replay, i, g) for i, g in enumerate(recorded.groups, start=1)]
        found.append(list(await asyncio.gather(*jobs)))
    return found


def _tagged(progress: Progress | None, name: str) -> Progress | None:
    if progress is None:
        return None
    say = progress
    return lambda line: say(f"{name}: {line}")


def replay_score(
    recorded: Recorded,
    llm: LLMConfig,
    *,
    label: str | None = None,
    replays: int = 1,
    concurrency: int = 1,
    critic_max_tokens: int | None = None,
    payload_tokens: int | None = None,
    engine_log: Path | None = None,
    progress: Progress | None = None,
) -> CriticScore:
    """Replay the groups to the critic of `llm` (an embedded critic starts its engine here)
    and score it; usage is the session ledger's."""
    if replays < 1 or concurrency < 1:
        raise SignError("--replays and --concurrency must be at least 1")
    config = critic_only(llm)
    method = replay_method(
        recorded, critic_max_tokens=critic_max_tokens, payload_tokens=payload_tokens
    )
    name = label or critic_label(llm)
    started = time.monotonic()
    with open_endpoints(config, engine_log=engine_log) as endpoints:
        endpoint = endpoints.roles.base_url("critic")
        if progress is not None:
            progress(f"{name}: {len(recorded.groups)} group(s) x {replays} at {endpoint}")
        deps = TrainingDeps(
            task=recorded.task, provider=endpoints.roles, config=recorded.config, run=recorded.run
        )
        records = asyncio.run(
            replay_groups(
                recorded,
                deps,
                method,
                replays=replays,
                concurrency=concurrency,
                progress=_tagged(progress, name),
            )
        )
        usage = endpoints.ledger.report().model_dump(mode="json")
    return score(name, endpoint, records, recorded, usage=usage, wall_s=time.monotonic() - started)


# -- output ---------------------------------------------------------------------------------------


def _u1_text(value: float | None) -> str:
    return "silent" if value is None else f"{value:+.2f}"


def summary_line(summary: SignSummary) -> str:
    """signs right N of M with an effect, wrong, silent, separation."""
    sep = "n/a (a kind uncredited)" if summary.separation is None else f"{summary.separation:+.2f}"
    return (
        f"signs right {summary.right} of {summary.with_effect} with an effect "
        f"({summary.wrong} wrong, {summary.silent} silent); separation = mean u1 of helpful - "
        f"mean u1 of harmful = {sep}"
    )


def critic_table(result: CriticScore, recorded: Recorded) -> Table:
    """One row per skill: its measured effect and verdict, u1 per replay, the sign."""
    level = recorded.effects.confidence
    interval = f"{level:.0%} interval" if level is not None else "interval"
    table = Table(
        title=f"critic {result.critic}: {result.groups} group(s) of iteration "
        f"{recorded.iteration}, {result.replays} replay(s)"
    )
    for column in ("agent", "skill", f"measured effect [{interval}]", "verdict"):
        table.add_column(column)
    for n in range(1, result.replays + 1):
        table.add_column(f"u1 replay {n}" if result.replays > 1 else "critic u1", justify="right")
    table.add_column("sign right?")
    for row in result.skills:
        record = AuditRecord(
            agent=row.agent,
            skill=row.skill,
            effect=row.effect,
            low=row.low,
            high=row.high,
            questions=0,
            invocations=None,
            verdict=row.verdict or "no effect",
        )
        measured = f"{signed(row.effect)} {interval_text(record)}" if row.verdict else "not probed"
        sign = {
            "right": "right",
            "wrong": "WRONG",
            "silent": "silent",
            "zero": "no sign (u1 0)",
            "unscored": "-",
        }[row.sign]
        table.add_row(
            row.agent,
            row.skill,
            measured,
            row.verdict or "-",
            *(_u1_text(v) for v in row.u1),
            sign,
        )
    return table


def print_score(console: Console, result: CriticScore, recorded: Recorded) -> None:
    """The critic's table, its summary line and what it cost."""
    console.print(critic_table(result, recorded))
    console.print(
        f"{result.critic}: {summary_line(result.summary)}",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    if result.replays > 1:
        per = "; ".join(
            f"{s.right}/{s.with_effect} right, sep "
            + ("n/a" if s.separation is None else f"{s.separation:+.2f}")
            for s in result.per_replay
        )
        console.print(f"  per replay: {per}", highlight=False, soft_wrap=True)
    if any(result.failed_groups):
        console.print(
            f"  failed critic calls per replay: {result.failed_groups} (first: "
            f"{result.errors[0].splitlines()[0][:160]})",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    if result.usage is not None:
        critic = result.usage.get("roles", {}).get("critic", {})
        console.print(
            f"  usage: critic {critic.get('calls', 0)} call(s), "
            f"{critic.get('prompt_tokens', 0):,} prompt + "
            f"{critic.get('completion_tokens', 0):,} completion tokens, "
            f"{critic.get('failures', 0)} failure(s); wall {result.wall_s:.0f} s "
            f"(engine start included) at {result.endpoint}",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


# -- command line ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a GRSE run folder (grse train / grse demo)")
    parser.add_argument(
        "--model",
        action="append",
        default=None,
        help="embedded critic model: default|medium|small|PATH (repeatable)",
    )
    parser.add_argument(
        "--config",
        action="append",
        type=Path,
        default=None,
        help="grse model config TOML whose [critic] is the critic (repeatable)",
    )
    parser.add_argument(
        "--recorded-only", action="store_true", help="score the run's own critic only (no model)"
    )
    parser.add_argument(
        "--effects",
        type=Path,
        default=None,
        help="a `grse skills audit` (audit.json, its folder or its --json list) of the "
        "replayed libraries instead of the run's probe results",
    )
    parser.add_argument("--iteration", type=int, default=1, help="iteration (default 1: u1)")
    parser.add_argument("--limit", type=int, default=None, help="the first N groups only")
    parser.add_argument("--replays", type=int, default=1, help="replays per critic (default 1)")
    parser.add_argument(
        "--concurrency", type=int, default=1, help="critic calls in flight (default 1)"
    )
    parser.add_argument(
        "--critic-max-tokens", type=int, default=None, help="critic cap (default: the run's)"
    )
    parser.add_argument(
        "--payload-tokens",
        type=int,
        default=None,
        help="critic payload budget in tokens (default: the run's; raise for a long context)",
    )
    parser.add_argument("--data", default=None, help="the task's data (default: the run's)")
    parser.add_argument("--out", type=Path, default=None, help="write every score as JSON here")
    return parser.parse_args(argv)


def critics(args: argparse.Namespace) -> list[tuple[str, LLMConfig]]:
    """(label, role config) of each critic on the command line, in order; read before any
    engine starts so a bad config is one line."""
    if args.recorded_only:
        if args.model or args.config:
            raise SignError("--recorded-only replays nothing: drop --model and --config")
        return []
    chosen: list[tuple[str, LLMConfig]] = []
    for path in args.config or []:
        llm = load_config(path)
        chosen.append((f"{critic_label(llm)} ({path.name})", llm))
    for model in args.model or ([] if args.config else ["default"]):
        llm = embedded_critic(model)
        chosen.append((critic_label(llm), llm))
    return chosen


def main(argv: Sequence[str] | None = None) -> None:
    """Score the run's critic and every chosen critic's replays; exit 1 with one line on bad
    input."""
    args = parse_args(argv)
    console = output_console()
    errors = output_console(stderr=True)
    try:
        chosen = critics(args)
        recorded = load_recorded(
            args.run,
            iteration=args.iteration,
            limit=args.limit,
            effects=args.effects,
            data=args.data,
        )
    except GrseError as error:
        raise SystemExit(f"error: {error}") from None
    level = recorded.effects.confidence
    console.print(
        f"run {args.run}: {len(recorded.groups)} group(s) of iteration {recorded.iteration} "
        f"(G = {len(recorded.groups[0].rollouts)}); effects from {recorded.effects.source}"
        + (f" at {level:.0%}" if level is not None else ""),
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    results = [recorded_score(recorded)]
    print_score(console, results[0], recorded)

    def progress(line: str) -> None:
        errors.print(line, highlight=False, markup=False, soft_wrap=True)

    for n, (label, llm) in enumerate(chosen, start=1):
        # One engine log per critic beside the JSON (else the engine's default place).
        log = args.out.with_name(f"{args.out.stem}.critic{n}.engine.log") if args.out else None
        try:
            result = replay_score(
                recorded,
                llm,
                label=label,
                replays=args.replays,
                concurrency=args.concurrency,
                critic_max_tokens=args.critic_max_tokens,
                payload_tokens=args.payload_tokens,
                engine_log=log,
                progress=progress,
            )
        except GrseError as error:
            raise SystemExit(f"error: {label}: {error}") from None
        results.append(result)
        print_score(console, result, recorded)
    if args.out is not None:
        report = CriticSignsReport(
            run=str(args.run),
            iteration=recorded.iteration,
            groups=[g.record.question_id for g in recorded.groups],
            effects_source=recorded.effects.source,
            confidence=level,
            critics=results,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        console.print(f"scores: {args.out}", highlight=False, soft_wrap=True)


if __name__ == "__main__":
    main()
