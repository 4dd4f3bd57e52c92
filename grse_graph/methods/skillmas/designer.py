"""LEARN and CREATE (the code's skill designer, spec §5.2-§5.3, §4.3) as operator rules on the
shared driver: their targets are the task types the code's priorities pick (at most 3 each,
best first), one action each.

LEARN writes a success-derived skill (A+) whose owner the optimizer names; CREATE turns a
locally diagnosable failure cluster (A-) into a repair: a revised copy of the implicated skill
(add-guard, reorder-step), a narrower description in place (tighten-retrieval), a narrower
skill beside a narrowed parent (split-skill), or a new patch skill. Every new skill enters the
pool as shadow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from grse_graph.errors import SkillError
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.operators.driver import OperatorRule
from grse_graph.skills import Skill

from .diagnosis import Diagnosis
from .drafting import (
    BODY_FORMAT,
    DrawnSkill,
    NarrowedDescription,
    action_pattern_summary,
    admit,
    cards_block,
    episode_block,
    new_skill,
    owner_schema,
    select_failure_examples,
    select_success_examples,
    write,
)
from .settings import EvolutionSettings
from .skills import ORIGIN_KEY, SKILL_EXEMPLAR, TASK_KEY, is_seed, lineage_id, slug
from .trace import by_type, success_rate
from .work import EvolutionAction, EvolutionWork, RoundEvidence

REPAIR_HINT: Mapping[str, str] = MappingProxyType(
    {
        "add-guard": "Add a guard or precondition check that would have stopped these failures.",
        "reorder-step": "Correct the order of the steps so the failing step comes where it "
        "belongs.",
        "tighten-retrieval": "Narrow when the skill applies so it is not used on these questions.",
        "split-skill": "Write a narrower skill for the failing sub-region only.",
    }
)
"""The kind of edit each local repair tag asks the writer for."""
REVISING_TAGS = ("add-guard", "reorder-step")


def type_skills(work: EvolutionWork, tau: str, origin: str | None = None) -> list[str]:
    """Lineage ids of the skills written for task type `tau` (of one origin, if given)."""
    return [
        lineage_id(s, agent)
        for agent, library in work.libraries.items()
        for s in library.skills
        if s.metadata.get(TASK_KEY) == tau
        and (origin is None or s.metadata.get(ORIGIN_KEY) == origin)
    ]


def best_first(scored: list[tuple[str, float]], limit: int) -> list[str]:
    """The `limit` task types with the highest priority (ties keep their order)."""
    return [tau for tau, _ in sorted(scored, key=lambda p: -p[1])[:limit]]


class Learn(OperatorRule[EvolutionWork, str, EvolutionAction]):
    """A+ (the code's LEARN): one success-derived skill per chosen task type, from the
    pre-computed action patterns, the best-scored reusable successes and failures, the policy
    cards and a structure exemplar; a type whose skill name this round is taken is passed
    over."""

    def __init__(
        self, evidence: RoundEvidence, provider: ChatModelProvider, settings: EvolutionSettings
    ) -> None:
        self.evidence, self.provider, self.settings = evidence, provider, settings
        self.schema = owner_schema(evidence.agents)
        self.reusable = [i.trace for i in evidence.retained if "reusable_success" in i.reasons]

    def name(self, tau: str) -> str:
        return f"{slug(tau)}-learned-r{self.evidence.round}"

    def targets(self, state: EvolutionWork) -> list[str]:
        """Types with a large enough share and both a success and a failure: while no learned
        skill of the type is good, 100 + 50 share + 30 rate, else for a proven but not yet
        good rate 70 + 30 rate (`computeLearnPriority`)."""
        s, traces, out = self.settings, self.evidence.traces, []
        for tau, items in by_type(traces).items():
            share, rate = len(items) / len(traces), success_rate(items)
            if share < s.min_share or rate in (0.0, 1.0):
                continue
            learned = type_skills(state, tau, "trajectory-learning")
            if max((state.table.global_q(i) for i in learned), default=0.0) < s.learned_good_q:
                out.append((tau, 100 + 50 * share + 30 * rate))
            elif s.proven_rate <= rate < s.target_rate:
                out.append((tau, 70 + 30 * rate))
        return best_first(out, s.max_learn)

    def applicable(self, state: EvolutionWork, target: str) -> bool:
        return not state.has_name(self.name(target))

    def prompt(self, work: EvolutionWork, tau: str) -> tuple[str, int, int]:
        """The LEARN prompt for `tau`, with how many successes it has and how many it shows."""
        ev = self.evidence
        of_type = ev.of_type(tau)
        successes = [t for t in of_type if t.success]
        wins = select_success_examples(
            [t for t in self.reusable if t.task_type == tau] or successes
        )
        losses = select_failure_examples([t for t in of_type if not t.success], successes)
        prompt = "\n".join(
            [
                f"Task type: {tau}, in {ev.domain}. Learn a reusable strategy from what the "
                "successful episodes did and the failed ones did not.",
                "Pre-computed action pattern analysis:",
                action_pattern_summary(of_type),
                *episode_block("Successful episodes:", wins),
                *episode_block("Failed episodes:", losses),
                *cards_block(work, f"{tau} " + " ".join(t.summary for t in of_type[:6])),
                f"Example of a well-structured skill:\n{SKILL_EXEMPLAR}",
                f"{BODY_FORMAT} Under 400 words, specific and actionable; name tools where they "
                "help. Choose the agent "
                f"(one of {', '.join(ev.agents)}) whose step this skill should guide.",
            ]
        )
        return prompt, len(successes), len(wins)

    async def apply(
        self, state: EvolutionWork, target: str
    ) -> tuple[EvolutionWork, list[EvolutionAction]]:
        tau, name, s = target, self.name(target), self.settings
        prompt, successes, shown = self.prompt(state, tau)
        drawn = await write(
            self.provider, self.schema, prompt, s.learn_temperature, s.caps.induce_max_tokens
        )
        action = EvolutionAction(kind="learn", skill=name, task_type=tau)
        if isinstance(drawn, str):
            return state, [action.rejected(drawn)]
        action = action.model_copy(update={"agent": str(drawn.model_dump()["agent"])})
        if not state.has_room(action.agent, s.max_auto_skills):
            return state, [action.rejected("library full")]
        # The code's fixed description alone would make every learned skill look alike to
        # the similarity selector, so the writer's own sentence follows it.
        learned = DrawnSkill(
            description=f"Strategy for {tau} questions, learned from {successes} "
            f"successful episodes (round {self.evidence.round}): {drawn.description}",
            body=drawn.body,
        )
        tags = [tau, "trajectory-learned", f"round-{self.evidence.round}"]
        try:
            skill = new_skill(name, learned, action.agent, tau, "trajectory-learning", tags)
        except SkillError as error:
            return state, [action.rejected(str(error))]
        offered = action.model_copy(update={"detail": f"from {shown} successes"})
        return state, [admit(state, action.agent, skill, offered)[1]]


@dataclass(frozen=True)
class RepairPlan:
    """What CREATE does for one task type: the owner, the implicated skill it may repair, the
    tag, the prompt's evidence header and the detail its action records."""

    tau: str
    agent: str
    parent: Skill | None
    tag: str
    header: tuple[str, ...]
    detail: str

    @property
    def revises(self) -> bool:
        """A revised copy of the parent (a heavily revised skill goes back to the pool)."""
        return self.parent is not None and self.tag in REVISING_TAGS

    @property
    def key(self) -> tuple[str, str, str]:
        """What a round touches at most once: (task type, owner, skill)."""
        return (self.tau, self.agent, self.parent.name if self.parent is not None else "")


def implicated_skill(work: EvolutionWork, diagnosis: Diagnosis, agent: str) -> Skill | None:
    """The first (by name) written skill of `agent` the diagnosis implicates."""
    names = set(diagnosis.analysis.implicated_skills if diagnosis.analysis else [])
    names |= {ref.partition("/")[2] for ref in diagnosis.skills if ref.startswith(f"{agent}/")}
    library = work.libraries.get(agent)
    for name in sorted(names):
        if library is not None and library.has(name) and not is_seed(library.get(name)):
            return library.get(name)
    return None


class Create(OperatorRule[EvolutionWork, str, EvolutionAction]):
    """A-: for scored task types with a locally diagnosable cluster (u = 1, local tag), a repair
    of the implicated skill or a new patch skill. Without one there is no CREATE (paper), unless
    `require_diagnosis` is off (the code: a patch skill from the failures anyway)."""

    def __init__(
        self,
        evidence: RoundEvidence,
        provider: ChatModelProvider,
        settings: EvolutionSettings,
        require_diagnosis: bool = True,
    ) -> None:
        self.evidence, self.provider, self.settings = evidence, provider, settings
        self.require_diagnosis = require_diagnosis

    def targets(self, state: EvolutionWork) -> list[str]:
        """Types with a large enough failure share, by the code's three cases
        (`computeCreationPriority`): no good skill of the type; a weak link (rate well under
        the overall one); widely spread skill utilities."""
        s, traces, out = self.settings, self.evidence.traces, []
        overall = success_rate(traces)
        for tau, items in by_type(traces).items():
            failures = sum(not t.success for t in items)
            if failures / len(traces) < s.min_share:
                continue
            rate, table = success_rate(items), state.table
            ids = [i for i in type_skills(state, tau) if table.count(i) >= s.relevant_from]
            qs = [table.global_q(i) for i in ids]
            best = max(qs, default=0.0)
            mean = sum(qs) / len(qs) if qs else 0.0
            # The code treats fewer than two values as maximally spread.
            variance = sum((q - mean) ** 2 for q in qs) / len(qs) if len(qs) >= 2 else 1.0
            if best < s.good_skill_q:
                out.append((tau, 100 + 100 * failures / len(traces) + 50 * (1 - best)))
            elif rate < s.target_rate and rate < overall - s.weak_link_delta:
                out.append((tau, 80 + 100 * (overall - rate)))
            elif variance > s.variance_trigger and rate < s.target_rate and len(qs) >= 2:
                out.append((tau, 60 + 100 * variance))
        return best_first(out, s.max_create)

    def plan(self, work: EvolutionWork, tau: str) -> RepairPlan | None:
        """The repair for `tau`, None when it has no locally diagnosable cluster and one is
        required."""
        ev = self.evidence
        diagnosis = next(
            (d for d in ev.diagnoses if d.task_type == tau and d.locally_diagnosable), None
        )
        a = diagnosis.analysis if diagnosis is not None else None
        if diagnosis is None or a is None:
            if self.require_diagnosis:
                return None
            agent, parent, tag = ev.final_agent, None, "none"
            failures = [t for t in ev.of_type(tau) if not t.success]
            analysis = ["No verified analysis: use the failures conservatively."]
            detail = "no verified cause (code rule)"
        else:
            agent = next((x for x in a.implicated_agents if x in work.libraries), ev.final_agent)
            parent = implicated_skill(work, diagnosis, agent)
            failures = [t for t in ev.traces if t.rollout_id in diagnosis.rollout_ids]
            tag = diagnosis.tag
            analysis = [
                f"Verified analysis: cause '{a.dominant_cause}', tag '{tag}'. Pattern: "
                f"{a.pattern} Explanation: {a.causal_explanation} Fix: {a.proposed_fix}",
                REPAIR_HINT[tag],
            ]
            detail = f"{tag}: {a.pattern}"
        successes = [t for t in ev.of_type(tau) if t.success]
        header = (
            f"The team repeatedly fails at {tau} questions.",
            *episode_block("Failures:", select_failure_examples(failures, successes)),
            *episode_block("Matched successes:", select_success_examples(successes)),
            *analysis,
            *cards_block(work, f"{tau} " + " ".join(t.error_message for t in failures)),
        )
        return RepairPlan(tau, agent, parent, tag, header, detail)

    async def apply(
        self, state: EvolutionWork, target: str
    ) -> tuple[EvolutionWork, list[EvolutionAction]]:
        plan = self.plan(state, target)
        if plan is None:
            noop = EvolutionAction(
                kind="noop", task_type=target, detail="no locally diagnosable cluster"
            )
            return state, [noop]
        if plan.key in state.touched:
            return state, []
        state.touched.add(plan.key)
        if plan.parent is not None and plan.tag == "tighten-retrieval":
            narrowed, action = await self.narrow(state, plan, plan.parent, plan.detail)
            if narrowed:
                state.repaired_types.append(plan.tau)
            return state, [action]
        if not state.has_room(plan.agent, self.settings.max_auto_skills):
            full = EvolutionAction(
                kind="rejected", agent=plan.agent, task_type=plan.tau, detail="library full"
            )
            return state, [full]
        r, revised = self.evidence.round, plan.parent if plan.revises else None
        name = f"{revised.name}-r{r}" if revised is not None else f"{slug(plan.tau)}-rl-r{r}"
        if state.has_name(name):
            return state, []
        return state, await self.repair(state, plan, name)

    async def repair(
        self, work: EvolutionWork, plan: RepairPlan, name: str
    ) -> list[EvolutionAction]:
        """Write skill `name` for the plan and offer it to the pool; a revised copy remembers
        its parent, a split narrows the parent."""
        parent = plan.parent if plan.revises else None
        current = [f"Current skill {parent.name}:\n{parent.body}"] if parent is not None else []
        prompt = "\n".join([*plan.header, *current, f"{BODY_FORMAT} Under 300 words."])
        s = self.settings
        drawn = await write(
            self.provider, DrawnSkill, prompt, s.create_temperature, s.caps.induce_max_tokens
        )
        action = EvolutionAction(
            kind="repair" if parent is not None else "create",
            agent=plan.agent,
            skill=name,
            task_type=plan.tau,
            detail=plan.detail,
        )
        if isinstance(drawn, str):
            return [action.rejected(drawn)]
        try:
            skill = new_skill(name, drawn, plan.agent, plan.tau, "failure-pattern")
        except SkillError as error:
            return [action.rejected(str(error))]
        ignore = f"{plan.agent}/{parent.name}" if parent is not None else None
        admitted, recorded = admit(work, plan.agent, skill, action, ignore=ignore)
        if not admitted:
            return [recorded]
        work.repaired_types.append(plan.tau)
        if parent is not None:
            work.parents[f"{plan.agent}/{name}"] = f"{plan.agent}/{parent.name}"
        elif plan.parent is not None and plan.tag == "split-skill":
            # The narrower skill takes the failing sub-region; the parent's applicability
            # narrows in place.
            _, narrowed = await self.narrow(work, plan, plan.parent, f"split into {name}")
            return [recorded, narrowed]
        return [recorded]

    async def narrow(
        self, work: EvolutionWork, plan: RepairPlan, parent: Skill, detail: str
    ) -> tuple[bool, EvolutionAction]:
        """Rewrite only the implicated skill's description so it applies more narrowly, in
        place; whether it did, and the action to record."""
        prompt = "\n".join(
            [
                *plan.header,
                f"Current description of {parent.name}: {parent.description}",
                "Rewrite only the description so the skill applies more narrowly.",
            ]
        )
        s = self.settings
        drawn = await write(
            self.provider,
            NarrowedDescription,
            prompt,
            s.create_temperature,
            s.caps.induce_max_tokens,
        )
        action = EvolutionAction(
            kind="tighten", agent=plan.agent, skill=parent.name, task_type=plan.tau
        )
        if isinstance(drawn, NarrowedDescription) and drawn.description.strip():
            narrowed = parent.with_description(" ".join(drawn.description.split())[:900])
            work.libraries[plan.agent] = work.libraries[plan.agent].replace(narrowed)
            return True, action.model_copy(update={"detail": detail})
        return False, action.rejected(str(drawn))
