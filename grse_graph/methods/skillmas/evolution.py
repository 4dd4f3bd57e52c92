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
from .pool import PoolDecision, Status, evaluate_shadow
from .retention import RetainedItem
from .skills import (
    LINEAGE_KEY,
    ORIGIN_KEY,
    TASK_KEY,
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

    def disable(self, agent: str, name: str, kind: ActionKind, detail: str) -> None:
        if not self.libraries[agent].has(name):
            return
        self.libraries[agent] = self.libraries[agent].remove(name)
        self.status.setdefault(agent, {})[name] = "disabled"
        self.actions.append(EvolutionAction(kind=kind, agent=agent, skill=name, detail=detail))


@dataclass(frozen=True)
class RoundEvidence:
    """What evolution reads: every normalised trace and the retained evidence of the round."""

    round: int
    traces: Sequence[VerifiedTrace]
    retained: Sequence[RetainedItem]
    diagnoses: Sequence[Diagnosis]
    agents: Sequence[str]
    final_agent: str


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


def pattern_summary(traces: Sequence[VerifiedTrace]) -> str:
    """Tool frequencies and the action bigrams found only in successes or only in failures."""

    def actions(t: VerifiedTrace) -> list[str]:
        return [line.split(" > ", 1)[-1].split("(", 1)[0] for line in t.action_trace]

    def bigrams(ts: Sequence[VerifiedTrace]) -> set[str]:
        return {f"{a} -> {b}" for t in ts for a, b in zip(actions(t), actions(t)[1:], strict=False)}

    wins = [t for t in traces if t.success]
    losses = [t for t in traces if not t.success]
    freq = Counter(a for t in traces for a in actions(t))
    lines = [
        f"successes {len(wins)}, failures {len(losses)}; mean tool calls "
        f"{sum(t.steps for t in wins) / max(1, len(wins)):.1f} vs "
        f"{sum(t.steps for t in losses) / max(1, len(losses)):.1f}",
        "actions: " + ", ".join(f"{a} x{n}" for a, n in freq.most_common(8)),
        "only in successes: " + (", ".join(sorted(bigrams(wins) - bigrams(losses))[:10]) or "-"),
        "only in failures: " + (", ".join(sorted(bigrams(losses) - bigrams(wins))[:10]) or "-"),
    ]
    return "\n".join(lines)


def _episode_block(title: str, traces: Sequence[VerifiedTrace], limit: int = 3) -> list[str]:
    lines = [title]
    for t in traces[:limit]:
        lines.append(f"- {t.summary} ({t.error_message or 'correct'})")
        lines.extend(f"    {a}" for a in t.action_trace[:20])
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
    name: str, draft: DrawnSkill, agent: str, tau: str, origin: str, lineage: str | None = None
) -> Skill:
    return Skill.build(
        name=name,
        description=" ".join(draft.description.split())[:900] or f"Strategy for {tau} questions",
        body=draft.body.strip(),
        metadata={
            LINEAGE_KEY: lineage or f"{agent}/{name}",
            ORIGIN_KEY: origin,
            TASK_KEY: tau,
        },
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
    """A+: one success-derived skill per chosen task type (reusable successes as exemplars)."""
    reusable = [i.trace for i in ev.retained if "reusable_success" in i.reasons]
    schema = _owner_schema(ev.agents)
    for tau, _ in learn_priorities(work, ev.traces):
        name = f"{slug(tau)}-learned-r{ev.round}"
        if any(lib.has(name) for lib in work.libraries.values()):
            continue
        of_type = [t for t in ev.traces if t.task_type == tau]
        wins = [t for t in reusable if t.task_type == tau] or [t for t in of_type if t.success]
        losses = [t for t in of_type if not t.success]
        prompt = "\n".join(
            [
                f"Task type: {tau}. Learn a reusable strategy from what the successful episodes "
                "did and the failed ones did not.",
                "Pre-computed action pattern analysis:",
                pattern_summary(of_type),
                *_episode_block("Successful episodes:", wins),
                *_episode_block("Failed episodes:", losses),
                *_cards_block(work, f"{tau} " + " ".join(t.summary for t in of_type[:6])),
                f"{BODY_FORMAT} Under 400 words, specific and actionable. Choose the agent "
                f"(one of {', '.join(ev.agents)}) whose step this skill should guide.",
            ]
        )
        drawn = await _write(provider, schema, prompt, LEARN_TEMPERATURE, WRITE_MAX_TOKENS)
        action = EvolutionAction(kind="learn", skill=name, task_type=tau)
        if isinstance(drawn, str):
            work.actions.append(action.model_copy(update={"kind": "rejected", "detail": drawn}))
            continue
        agent = str(drawn.model_dump()["agent"])
        if not work.has_room(agent):
            work.actions.append(
                action.model_copy(
                    update={"kind": "rejected", "agent": agent, "detail": "library full"}
                )
            )
            continue
        try:
            skill = _new_skill(name, drawn, agent, tau, "trajectory-learning")  # type: ignore[arg-type]
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
        header = [
            f"The team repeatedly fails at {tau} questions.",
            *_episode_block("Failures:", failures),
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
    work: EvolutionWork, traces: Sequence[VerifiedTrace], min_uses: int, min_success_rate: float
) -> None:
    """Promote or hold every shadow skill on this round's uses; a promoted revised copy
    disables its parent."""
    for agent, statuses in work.status.items():
        for name, status in list(statuses.items()):
            if status != "shadow" or not work.libraries.get(agent, SkillLibrary.empty(agent)).has(
                name
            ):
                continue
            decision = evaluate_shadow(agent, name, traces, min_uses, min_success_rate)
            work.pool.append(decision)
            if decision.decision == "promote":
                statuses[name] = "active"
                work.promoted.append(f"{agent}/{name}")
                work.actions.append(
                    EvolutionAction(kind="promote", agent=agent, skill=name, detail=decision.reason)
                )
                parent = work.parents.pop(f"{agent}/{name}", None)
                if parent:
                    p_agent, _, p_name = parent.partition("/")
                    work.disable(p_agent, p_name, "prune", f"replaced by promoted {name}")


def drop_observed(previous: float | None, current: float) -> float | None:
    """The drop magnitude when the success rate fell by more than 0.02 (flag only)."""
    if previous is None:
        return None
    drop = previous - current
    return drop if drop > DROP_THRESHOLD else None
