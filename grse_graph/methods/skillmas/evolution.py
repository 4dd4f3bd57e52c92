"""Skill evolution of one round (spec §5, §9.3 step 6): LEARN from reusable successes (A+),
CREATE or repair from locally diagnosable failure clusters (A-), the forge's refine and prune,
the drop flag, and the validation pool's promote/hold decisions.

Every new or heavily revised skill enters as a shadow skill (the pool); a revised copy's parent
is disabled when the copy is promoted. Writing calls use the optimizer role.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from grse_graph.errors import ModelRequestRefused, SkillError, StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.llm.structured import astructured_call
from grse_graph.skills import Skill, SkillLibrary

from .diagnosis import Diagnosis
from .pool import Counting, PoolDecision, PoolTally, Status, evaluate_shadow
from .retention import RetainedItem
from .skills import (
    LINEAGE_KEY,
    ORIGIN_KEY,
    SKILL_EXEMPLAR,
    TAGS_KEY,
    TASK_KEY,
    ParkedSkill,
    content_problems,
    is_seed,
    lineage_id,
    near_duplicate,
    policy_cards,
    slug,
)
from .tables import SkillUtilityTable
from .trace import VerifiedTrace

ActionKind = Literal[
    "learn",
    "create",
    "repair",
    "tighten",
    "refine",
    "prune",
    "promote",
    "hold",
    "disable",
    "demote",
    "restore",
    "rejected",
    "noop",
]
MAX_LEARN = MAX_CREATE = MAX_REFINE = 3
MAX_AUTO_SKILLS = 15
MIN_SHARE = 0.02
LEARNED_GOOD_Q = 0.8
PROVEN_RATE, TARGET_RATE = 0.60, 0.90
GOOD_SKILL_Q = 0.85
WEAK_LINK_DELTA = 0.05
REFINE_Q, REFINE_TRIALS = 0.2, 3
PRUNE_Q, PRUNE_TRIALS = 0.05, 5
DROP_THRESHOLD = 0.02
LEARN_TEMPERATURE, CREATE_TEMPERATURE, REFINE_TEMPERATURE = 0.3, 0.4, 0.3
WRITE_MAX_TOKENS, REFINE_MAX_TOKENS = 1200, 800
MAX_EXAMPLES, MAX_TRACE_LINES = 3, 20
REPAIR_HINT = {
    "add-guard": "Add a guard or precondition check that would have stopped these failures.",
    "reorder-step": "Correct the order of the steps so the failing step comes where it belongs.",
    "tighten-retrieval": "Narrow when the skill applies so it is not used on these questions.",
    "split-skill": "Write a narrower skill for the failing sub-region only.",
}
BODY_FORMAT = (
    "Write the skill body in markdown with exactly these sections: `## When to use` "
    "(applicability), `## Steps` (numbered procedure), `## Guards` (preconditions and don'ts), "
    "`## Checks` (what to verify before answering). No front matter."
)


class EvolutionAction(BaseModel):
    """One thing skill evolution did (or declined to do) this round."""

    kind: ActionKind
    agent: str = ""
    skill: str = ""
    task_type: str = ""
    detail: str = ""


class DrawnSkill(BaseModel):
    """What a writing call returns (the owner agent field is added per team)."""

    description: str = Field(description="what the skill does and when to use it, one sentence")
    body: str = Field(description="the markdown body")


class RefinedBody(BaseModel):
    body: str = Field(description="the improved markdown body")


class NarrowedDescription(BaseModel):
    description: str = Field(description="a narrower description: exactly when the skill applies")


@dataclass
class EvolutionWork:
    """The libraries, statuses and tables skill evolution edits in one round."""

    libraries: dict[str, SkillLibrary]
    status: dict[str, dict[str, Status]]
    table: SkillUtilityTable
    parents: dict[str, str] = field(default_factory=dict)  # "agent/copy" -> "agent/parent"
    actions: list[EvolutionAction] = field(default_factory=list)
    new_skills: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)
    repaired_types: list[str] = field(default_factory=list)
    pool: list[PoolDecision] = field(default_factory=list)
    touched: set[tuple[str, str, str]] = field(default_factory=set)
    tallies: dict[str, PoolTally] = field(default_factory=dict)  # "agent/name" -> pool tally
    parked: list[ParkedSkill] = field(default_factory=list)  # parents disabled by a promotion
    demoted: set[str] = field(default_factory=set)  # back in the pool: not evaluated this round

    def auto_count(self) -> int:
        return sum(not is_seed(s) for lib in self.libraries.values() for s in lib.skills)

    def has_room(self, agent: str) -> bool:
        library = self.libraries[agent]
        return (library.limit is None or len(library) < library.limit) and (
            self.auto_count() < MAX_AUTO_SKILLS
        )

    def add_shadow(self, agent: str, skill: Skill, action: EvolutionAction) -> None:
        self.libraries[agent] = self.libraries[agent].add(skill)
        self.status.setdefault(agent, {})[skill.name] = "shadow"
        self.table = self.table.initialize(lineage_id(skill, agent))
        self.new_skills.append(f"{agent}/{skill.name}")
        self.actions.append(action)

    def disable(self, agent: str, name: str, kind: ActionKind, detail: str) -> Skill | None:
        """Take a skill out of its library (status disabled); returns it (None if absent)."""
        if agent not in self.libraries or not self.libraries[agent].has(name):
            return None
        skill = self.libraries[agent].get(name)
        self.libraries[agent] = self.libraries[agent].remove(name)
        self.status.setdefault(agent, {})[name] = "disabled"
        self.tallies.pop(f"{agent}/{name}", None)
        self.actions.append(EvolutionAction(kind=kind, agent=agent, skill=name, detail=detail))
        return skill


@dataclass(frozen=True)
class RoundEvidence:
    """What evolution reads: every normalised trace and the retained evidence of the round."""

    round: int
    traces: Sequence[VerifiedTrace]
    retained: Sequence[RetainedItem]
    diagnoses: Sequence[Diagnosis]
    agents: Sequence[str]
    final_agent: str
    domain: str = "a question-answering agent team"


def _rate(traces: Sequence[VerifiedTrace]) -> float:
    return sum(t.success for t in traces) / len(traces) if traces else 0.0


def _type_skills(work: EvolutionWork, tau: str, origin: str | None = None) -> list[str]:
    found = []
    for agent, library in work.libraries.items():
        for s in library.skills:
            if s.metadata.get(TASK_KEY) == tau and (
                origin is None or s.metadata.get(ORIGIN_KEY) == origin
            ):
                found.append(lineage_id(s, agent))
    return found


def learn_priorities(
    work: EvolutionWork, traces: Sequence[VerifiedTrace]
) -> list[tuple[str, float]]:
    """Task types to LEARN for, by the code's priority (top 3)."""
    by_type: dict[str, list[VerifiedTrace]] = {}
    for t in traces:
        by_type.setdefault(t.task_type, []).append(t)
    out = []
    for tau, items in by_type.items():
        share, rate = len(items) / len(traces), _rate(items)
        if share < MIN_SHARE or rate in (0.0, 1.0):
            continue
        learned = [work.table.global_q(i) for i in _type_skills(work, tau, "trajectory-learning")]
        best = max(learned, default=0.0)
        if best < LEARNED_GOOD_Q:
            out.append((tau, 100 + 50 * share + 30 * rate))
        elif PROVEN_RATE <= rate < TARGET_RATE:
            out.append((tau, 70 + 30 * rate))
    out.sort(key=lambda p: -p[1])
    return out[:MAX_LEARN]


def create_priorities(
    work: EvolutionWork, traces: Sequence[VerifiedTrace]
) -> list[tuple[str, float]]:
    """Task types to CREATE for, by the code's three cases (top 3)."""
    overall = _rate(traces)
    by_type: dict[str, list[VerifiedTrace]] = {}
    for t in traces:
        by_type.setdefault(t.task_type, []).append(t)
    out = []
    for tau, items in by_type.items():
        failures = sum(not t.success for t in items)
        if not traces or failures / len(traces) < MIN_SHARE:
            continue
        rate = _rate(items)
        qs = [work.table.global_q(i) for i in _type_skills(work, tau) if work.table.count(i) >= 3]
        best = max(qs, default=0.0)
        mean = sum(qs) / len(qs) if qs else 0.0
        variance = sum((q - mean) ** 2 for q in qs) / len(qs) if len(qs) >= 2 else 1.0
        if best < GOOD_SKILL_Q:
            out.append((tau, 100 + 100 * failures / len(traces) + 50 * (1 - best)))
        elif rate < TARGET_RATE and rate < overall - WEAK_LINK_DELTA:
            out.append((tau, 80 + 100 * (overall - rate)))
        elif variance > 0.02 and rate < TARGET_RATE and len(qs) >= 2:
            out.append((tau, 60 + 100 * variance))
    out.sort(key=lambda p: -p[1])
    return out[:MAX_CREATE]


def action_names(trace: VerifiedTrace) -> list[str]:
    """The tool (or pseudo-action) names of an action trace, in order."""
    return [line.split(" > ", 1)[-1].split("(", 1)[0].strip() for line in trace.action_trace]


def _ngrams(names: Sequence[str], n: int) -> list[str]:
    return [" -> ".join(names[i : i + n]) for i in range(len(names) - n + 1)]


class ActionPatterns(BaseModel):
    """The code's pre-computed action pattern analysis (`extractActionPatterns`) of one task
    type's episodes: counts and mean steps per side, the top tools per side, the bigram and
    trigram sequences found only in successes or only in failures, the top success bigrams."""

    successes: int
    failures: int
    success_mean_steps: float
    failure_mean_steps: float
    success_tools: list[tuple[str, int]]
    failure_tools: list[tuple[str, int]]
    success_only: list[str]
    failure_only: list[str]
    success_bigrams: list[tuple[str, int]]


def extract_action_patterns(traces: Sequence[VerifiedTrace]) -> ActionPatterns:
    """Tool frequencies, bigrams and trigrams of successes against failures (first-seen order
    for the set differences, at most 10 each; top 8 tools per side; top 5 success bigrams)."""
    wins = [t for t in traces if t.success]
    losses = [t for t in traces if not t.success]

    def sequences(ts: Sequence[VerifiedTrace]) -> list[str]:
        out: list[str] = []
        for t in ts:
            names = action_names(t)
            out += _ngrams(names, 2) + _ngrams(names, 3)
        return list(dict.fromkeys(out))

    won, lost = sequences(wins), sequences(losses)
    bigrams = Counter(g for t in wins for g in _ngrams(action_names(t), 2))
    return ActionPatterns(
        successes=len(wins),
        failures=len(losses),
        success_mean_steps=sum(t.steps for t in wins) / len(wins) if wins else 0.0,
        failure_mean_steps=sum(t.steps for t in losses) / len(losses) if losses else 0.0,
        success_tools=Counter(a for t in wins for a in action_names(t)).most_common(8),
        failure_tools=Counter(a for t in losses for a in action_names(t)).most_common(8),
        success_only=[g for g in won if g not in set(lost)][:10],
        failure_only=[g for g in lost if g not in set(won)][:10],
        success_bigrams=bigrams.most_common(5),
    )


def format_pattern_summary(p: ActionPatterns) -> str:
    """The pattern analysis as the LEARN prompt shows it (`formatPatternSummary`)."""

    def counted(pairs: Sequence[tuple[str, int]]) -> str:
        return ", ".join(f"{a} x{n}" for a, n in pairs) or "-"

    return "\n".join(
        [
            f"successes {p.successes} (mean tool calls {p.success_mean_steps:.1f}), failures "
            f"{p.failures} (mean tool calls {p.failure_mean_steps:.1f})",
            f"top actions in successes: {counted(p.success_tools)}",
            f"top actions in failures: {counted(p.failure_tools)}",
            "sequences only in successes: " + ("; ".join(p.success_only) or "-"),
            "sequences only in failures: " + ("; ".join(p.failure_only) or "-"),
            f"top success bigrams: {counted(p.success_bigrams)}",
        ]
    )


def pattern_summary(traces: Sequence[VerifiedTrace]) -> str:
    return format_pattern_summary(extract_action_patterns(traces))


def _density(trace: VerifiedTrace) -> float:
    return min(1.0, len(trace.action_trace) / MAX_TRACE_LINES)


def _used_count(trace: VerifiedTrace) -> int:
    return len({s for names in trace.used.values() for s in names})


def success_example_score(trace: VerifiedTrace) -> float:
    """0.45 / steps + 0.35 trace density + 0.20 / used skills (steps and skills at least 1:
    a tool-free episode counts as one step)."""
    return 0.45 / max(1, trace.steps) + 0.35 * _density(trace) + 0.20 / max(1, _used_count(trace))


def failure_example_score(trace: VerifiedTrace, success_mean_steps: float | None) -> float:
    """0.35 near-miss closeness + 0.25 trace density + 0.20 overlap + 0.20 error signal;
    closeness = 1 - |steps - mean success steps| / mean success steps in [0, 1] (0.4 without
    successes; with a mean of 0, 1 for a tool-free failure)."""
    if success_mean_steps is None:
        closeness = 0.4
    elif success_mean_steps <= 0:
        closeness = 1.0 if trace.steps == 0 else 0.0
    else:
        closeness = 1 - abs(trace.steps - success_mean_steps) / success_mean_steps
    closeness = max(0.0, min(1.0, closeness))
    overlap = 0.25 * max(0, _used_count(trace) - 1) + (0.35 if len(trace.executors) > 1 else 0)
    return (
        0.35 * closeness
        + 0.25 * _density(trace)
        + 0.20 * min(1.0, overlap)
        + 0.20 * (1.0 if trace.error_message else 0.2)
    )


def select_success_examples(
    traces: Sequence[VerifiedTrace], limit: int = MAX_EXAMPLES
) -> list[VerifiedTrace]:
    """The best `limit` successes by the success-example score (ties keep trace order)."""
    return sorted(traces, key=lambda t: -success_example_score(t))[:limit]


def select_failure_examples(
    failures: Sequence[VerifiedTrace],
    successes: Sequence[VerifiedTrace],
    limit: int = MAX_EXAMPLES,
) -> list[VerifiedTrace]:
    """The best `limit` failures by the failure-example score (ties keep trace order)."""
    mean = sum(t.steps for t in successes) / len(successes) if successes else None
    return sorted(failures, key=lambda t: -failure_example_score(t, mean))[:limit]


def _episode_block(title: str, traces: Sequence[VerifiedTrace]) -> list[str]:
    lines = [title]
    for t in traces[:MAX_EXAMPLES]:
        lines.append(f"- {t.summary} ({t.error_message or 'correct'})")
        lines.extend(f"    {a}" for a in t.action_trace[:MAX_TRACE_LINES])
    return lines


def _cards_block(work: EvolutionWork, query: str) -> list[str]:
    cards = policy_cards(work.libraries, work.status, query)
    if not cards:
        return []
    lines = ["Reference skills (adapt, do not copy):"]
    lines += [f"### {c.title}\n{c.content}" for c in cards]
    return lines


def _owner_schema(agents: Sequence[str]) -> type[BaseModel]:
    owner: Any = Literal[tuple(agents)]
    return create_model(
        "OwnedSkillDraft",
        __base__=DrawnSkill,
        agent=(owner, Field(description="the team agent whose step this skill guides")),
    )


async def _write(
    provider: ChatModelProvider,
    schema: type[BaseModel],
    prompt: str,
    temperature: float,
    max_tokens: int,
) -> BaseModel | str:
    model = provider.chat(
        "optimizer", sampling=SamplingSettings(temperature=temperature), max_tokens=max_tokens
    )
    messages = [
        SystemMessage("You write reusable skills (SKILL.md bodies) for a question-answering team."),
        HumanMessage(prompt),
    ]
    try:
        return await astructured_call(model, schema, messages)
    except (StructuredOutputError, ModelRequestRefused) as failure:
        return f"{type(failure).__name__}: {failure}"


def _new_skill(
    name: str,
    draft: DrawnSkill,
    agent: str,
    tau: str,
    origin: str,
    tags: Sequence[str] = (),
) -> Skill:
    metadata = {LINEAGE_KEY: f"{agent}/{name}", ORIGIN_KEY: origin, TASK_KEY: tau}
    if tags:
        metadata[TAGS_KEY] = ",".join(tags)
    return Skill.build(
        name=name,
        description=" ".join(draft.description.split())[:900] or f"Strategy for {tau} questions",
        body=draft.body.strip(),
        metadata=metadata,
    )


def _admit(
    work: EvolutionWork,
    agent: str,
    skill: Skill,
    action: EvolutionAction,
    ignore: str | None = None,
) -> None:
    """Content validation and dedup, then the pool (a rejected draft is recorded)."""
    problems = content_problems(skill.body)
    duplicate = near_duplicate(skill.description, skill.body, work.libraries, ignore=ignore)
    if problems or duplicate is not None:
        why = "; ".join(problems)
        if duplicate is not None and not why:
            why = f"near duplicate of {duplicate[0]} ({duplicate[1]:.2f})"
        work.actions.append(action.model_copy(update={"kind": "rejected", "detail": why}))
        return
    work.add_shadow(agent, skill, action)


async def learn(work: EvolutionWork, ev: RoundEvidence, provider: ChatModelProvider) -> None:
    """A+ (the code's LEARN): one success-derived skill per chosen task type, from the
    pre-computed action patterns, the best-scored reusable successes and failures, the policy
    cards and a structure exemplar."""
    reusable = [i.trace for i in ev.retained if "reusable_success" in i.reasons]
    schema = _owner_schema(ev.agents)
    for tau, _ in learn_priorities(work, ev.traces):
        name = f"{slug(tau)}-learned-r{ev.round}"
        if any(lib.has(name) for lib in work.libraries.values()):
            continue
        of_type = [t for t in ev.traces if t.task_type == tau]
        successes = [t for t in of_type if t.success]
        wins = select_success_examples([t for t in reusable if t.task_type == tau] or successes)
        losses = select_failure_examples([t for t in of_type if not t.success], successes)
        prompt = "\n".join(
            [
                f"Task type: {tau}, in {ev.domain}. Learn a reusable strategy from what the "
                "successful episodes did and the failed ones did not.",
                "Pre-computed action pattern analysis:",
                pattern_summary(of_type),
                *_episode_block("Successful episodes:", wins),
                *_episode_block("Failed episodes:", losses),
                *_cards_block(work, f"{tau} " + " ".join(t.summary for t in of_type[:6])),
                f"Example of a well-structured skill:\n{SKILL_EXEMPLAR}",
                f"{BODY_FORMAT} Under 400 words, specific and actionable; name tools where they "
                "help. Choose the agent "
                f"(one of {', '.join(ev.agents)}) whose step this skill should guide.",
            ]
        )
        drawn = await _write(provider, schema, prompt, LEARN_TEMPERATURE, WRITE_MAX_TOKENS)
        action = EvolutionAction(kind="learn", skill=name, task_type=tau)
        if isinstance(drawn, str):
            work.actions.append(action.model_copy(update={"kind": "rejected", "detail": drawn}))
            continue
        fields = drawn.model_dump()
        agent = str(fields["agent"])
        if not work.has_room(agent):
            work.actions.append(
                action.model_copy(
                    update={"kind": "rejected", "agent": agent, "detail": "library full"}
                )
            )
            continue
        learned = DrawnSkill(
            description=f"Strategy for {tau} questions, learned from {len(successes)} "
            f"successful episodes (round {ev.round}): {fields['description']}",
            body=str(fields["body"]),
        )
        try:
            skill = _new_skill(
                name,
                learned,
                agent,
                tau,
                "trajectory-learning",
                tags=[tau, "trajectory-learned", f"round-{ev.round}"],
            )
        except SkillError as error:
            work.actions.append(
                action.model_copy(update={"kind": "rejected", "agent": agent, "detail": str(error)})
            )
            continue
        _admit(
            work,
            agent,
            skill,
            action.model_copy(update={"agent": agent, "detail": f"from {len(wins)} successes"}),
        )


def _implicated_skill(work: EvolutionWork, diagnosis: Diagnosis, agent: str) -> Skill | None:
    names = set(diagnosis.analysis.implicated_skills if diagnosis.analysis else [])
    names |= {ref.partition("/")[2] for ref in diagnosis.skills if ref.startswith(f"{agent}/")}
    library = work.libraries.get(agent)
    for name in sorted(names):
        if library is not None and library.has(name) and not is_seed(library.get(name)):
            return library.get(name)
    return None


async def _narrow(
    work: EvolutionWork,
    provider: ChatModelProvider,
    header: Sequence[str],
    agent: str,
    parent: Skill,
    tau: str,
    detail: str,
) -> bool:
    """Rewrite only a skill's description so it applies more narrowly, in place."""
    prompt = "\n".join(
        [
            *header,
            f"Current description of {parent.name}: {parent.description}",
            "Rewrite only the description so the skill applies more narrowly.",
        ]
    )
    drawn = await _write(
        provider, NarrowedDescription, prompt, CREATE_TEMPERATURE, WRITE_MAX_TOKENS
    )
    action = EvolutionAction(kind="tighten", agent=agent, skill=parent.name, task_type=tau)
    if isinstance(drawn, NarrowedDescription) and drawn.description.strip():
        narrowed = parent.with_description(" ".join(drawn.description.split())[:900])
        work.libraries[agent] = work.libraries[agent].replace(narrowed)
        work.actions.append(action.model_copy(update={"detail": detail}))
        return True
    work.actions.append(action.model_copy(update={"kind": "rejected", "detail": str(drawn)}))
    return False


async def create(
    work: EvolutionWork,
    ev: RoundEvidence,
    provider: ChatModelProvider,
    require_diagnosis: bool = True,
) -> None:
    """A-: for scored task types with a locally diagnosable cluster (u = 1, local tag), a repair
    of the implicated skill or a new patch skill. Without one there is no CREATE (paper), unless
    `require_diagnosis` is off (the code: a patch skill from the failures anyway)."""
    done: set[str] = set()
    for tau, _ in create_priorities(work, ev.traces):
        if tau in done:
            continue
        diagnosis = next(
            (d for d in ev.diagnoses if d.task_type == tau and d.locally_diagnosable), None
        )
        a = diagnosis.analysis if diagnosis is not None else None
        if (diagnosis is None or a is None) and require_diagnosis:
            work.actions.append(
                EvolutionAction(kind="noop", task_type=tau, detail="no locally diagnosable cluster")
            )
            continue
        done.add(tau)
        if diagnosis is not None and a is not None:
            agent = next((x for x in a.implicated_agents if x in work.libraries), ev.final_agent)
            parent = _implicated_skill(work, diagnosis, agent)
            failures = [t for t in ev.traces if t.rollout_id in diagnosis.rollout_ids]
            tag = diagnosis.tag
            analysis = [
                f"Verified analysis: cause '{a.dominant_cause}', tag '{tag}'. Pattern: "
                f"{a.pattern} Explanation: {a.causal_explanation} Fix: {a.proposed_fix}",
                REPAIR_HINT[tag],
            ]
            detail = f"{tag}: {a.pattern}"
        else:
            agent, parent, tag = ev.final_agent, None, "none"
            failures = [t for t in ev.traces if t.task_type == tau and not t.success]
            analysis = ["No verified analysis: use the failures conservatively."]
            detail = "no verified cause (code rule)"
        successes = [t for t in ev.traces if t.task_type == tau and t.success]
        header = [
            f"The team repeatedly fails at {tau} questions.",
            *_episode_block("Failures:", select_failure_examples(failures, successes)),
            *_episode_block("Matched successes:", select_success_examples(successes)),
            *analysis,
            *_cards_block(work, f"{tau} " + " ".join(t.error_message for t in failures)),
        ]
        key = (tau, agent, parent.name if parent else "")
        if key in work.touched:
            continue
        work.touched.add(key)
        if parent is not None and tag == "tighten-retrieval":
            if await _narrow(work, provider, header, agent, parent, tau, detail):
                work.repaired_types.append(tau)
            continue
        if not work.has_room(agent):
            work.actions.append(
                EvolutionAction(kind="rejected", agent=agent, task_type=tau, detail="library full")
            )
            continue
        revise = parent is not None and tag in ("add-guard", "reorder-step")
        name = f"{parent.name}-r{ev.round}" if revise and parent else f"{slug(tau)}-rl-r{ev.round}"
        if any(lib.has(name) for lib in work.libraries.values()):
            continue
        current = [f"Current skill {parent.name}:\n{parent.body}"] if revise and parent else []
        prompt = "\n".join([*header, *current, f"{BODY_FORMAT} Under 300 words."])
        drawn = await _write(provider, DrawnSkill, prompt, CREATE_TEMPERATURE, WRITE_MAX_TOKENS)
        kind: ActionKind = "repair" if revise else "create"
        action = EvolutionAction(kind=kind, agent=agent, skill=name, task_type=tau, detail=detail)
        if isinstance(drawn, str):
            work.actions.append(action.model_copy(update={"kind": "rejected", "detail": drawn}))
            continue
        try:
            skill = _new_skill(name, drawn, agent, tau, "failure-pattern")  # type: ignore[arg-type]
        except SkillError as error:
            work.actions.append(
                action.model_copy(update={"kind": "rejected", "detail": str(error)})
            )
            continue
        before = len(work.new_skills)
        _admit(
            work,
            agent,
            skill,
            action,
            ignore=f"{agent}/{parent.name}" if revise and parent else None,
        )
        if len(work.new_skills) == before:
            continue
        work.repaired_types.append(tau)
        if revise and parent:
            work.parents[f"{agent}/{name}"] = f"{agent}/{parent.name}"
        elif parent is not None and tag == "split-skill":
            # The narrower skill takes the failing sub-region; the parent's applicability
            # narrows in place.
            await _narrow(work, provider, header, agent, parent, tau, f"split into {name}")


async def refine(work: EvolutionWork, ev: RoundEvidence, provider: ChatModelProvider) -> None:
    """The forge's refine: the first 3 underperformers (global n >= 3, q < 0.2) in table order,
    seeds taking their slots unrefined, disabled skills skipped; bodies rewritten in place."""
    owners = {
        lineage_id(s, agent): (agent, s.name)
        for agent, lib in work.libraries.items()
        for s in lib.skills
    }
    live = [i for i in work.table.underperformers(REFINE_Q, REFINE_TRIALS) if i in owners]
    for skill_id in live[:MAX_REFINE]:
        agent, name = owners[skill_id]
        skill = work.libraries[agent].get(name)
        tau = skill.metadata.get(TASK_KEY, "")
        if is_seed(skill) or (tau, agent, name) in work.touched:
            continue
        work.touched.add((tau, agent, name))
        used = [t for t in ev.traces if name in t.used.get(agent, [])]
        lines = [
            f"Skill {name} has success rate {work.table.global_q(skill_id):.2f} over "
            f"{work.table.count(skill_id)} uses (threshold {REFINE_Q}).",
            "Episodes where it was used:",
            *[f"- [{t.task_type}] {t.summary} ({t.error_message or 'correct'})" for t in used[:10]],
            f"Current body:\n{skill.body}",
            "Improve it to raise the success rate: keep what works, fix what does not.",
            BODY_FORMAT,
        ]
        drawn = await _write(
            provider, RefinedBody, "\n".join(lines), REFINE_TEMPERATURE, REFINE_MAX_TOKENS
        )
        if isinstance(drawn, RefinedBody) and not content_problems(drawn.body):
            work.libraries[agent] = work.libraries[agent].replace(
                skill.with_body(drawn.body.strip())
            )
            work.actions.append(
                EvolutionAction(kind="refine", agent=agent, skill=name, task_type=tau)
            )
        else:
            detail = drawn if isinstance(drawn, str) else "; ".join(content_problems(drawn.body))  # type: ignore[attr-defined]
            work.actions.append(
                EvolutionAction(
                    kind="rejected", agent=agent, skill=name, detail=f"refine: {detail}"
                )
            )


def prune(work: EvolutionWork) -> None:
    """The forge's prune: every non-seed skill with global n >= 5 and q < 0.05 is disabled."""
    for agent, library in list(work.libraries.items()):
        for skill in library.skills:
            skill_id = lineage_id(skill, agent)
            if is_seed(skill):
                continue
            if (
                work.table.count(skill_id) >= PRUNE_TRIALS
                and work.table.global_q(skill_id) < PRUNE_Q
            ):
                work.disable(agent, skill.name, "prune", f"q {work.table.global_q(skill_id):.2f}")


def evaluate_pool(
    work: EvolutionWork,
    traces: Sequence[VerifiedTrace],
    min_uses: int,
    min_success_rate: float,
    counting: Counting = "round",
    disable_after: int | None = None,
) -> None:
    """Promote, hold or disable every shadow skill on its verified uses (this round's, or all
    rounds' with cumulative counting); a promoted revised copy disables its parent (parked, so
    a demotion can put it back)."""
    for agent, statuses in work.status.items():
        for name, status in list(statuses.items()):
            if status != "shadow" or not work.libraries.get(agent, SkillLibrary.empty(agent)).has(
                name
            ):
                continue
            ref = f"{agent}/{name}"
            if ref in work.demoted:
                continue
            decision, tally = evaluate_shadow(
                agent,
                name,
                traces,
                min_uses,
                min_success_rate,
                counting=counting,
                tally=work.tallies.get(ref),
                disable_after=disable_after,
            )
            work.pool.append(decision)
            work.tallies[ref] = tally
            if decision.decision == "disable":
                work.disable(agent, name, "disable", decision.reason)
                work.parents.pop(ref, None)
            elif decision.decision == "promote":
                statuses[name] = "active"
                work.tallies.pop(ref, None)
                work.promoted.append(ref)
                work.actions.append(
                    EvolutionAction(kind="promote", agent=agent, skill=name, detail=decision.reason)
                )
                parent = work.parents.pop(ref, None)
                if parent:
                    p_agent, _, p_name = parent.partition("/")
                    removed = work.disable(p_agent, p_name, "prune", f"replaced by promoted {name}")
                    if removed is not None:
                        work.parked.append(ParkedSkill.of(p_agent, removed, replaced_by=ref))


def drop_observed(previous: float | None, current: float) -> float | None:
    """The drop magnitude when the success rate fell by more than 0.02 (flag only)."""
    if previous is None:
        return None
    drop = previous - current
    return drop if drop > DROP_THRESHOLD else None
