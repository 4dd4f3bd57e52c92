"""Recorder for SkillMAS's skill evolution: fixed rounds run through learn, create, refine,
prune and the pool, with scripted optimizer replies, snapshotted as plain JSON values.

The snapshot of a scenario holds every request the optimizer received (role, schema,
temperature, token cap, messages) and what the round's workspace looks like afterwards
(actions, library edits as SKILL.md text, statuses, Q^s entries, parents, pool, ...).
`tests/fixtures/skillmas/evolution_replay.json` holds the snapshots the evolution code made
before its operators moved onto the shared operator driver (issue 41);
`test_skillmas_evolution_replay.py` runs the same scenarios on the current code and compares.
Rewrite the fixture (from the current code) only for an intended change of behaviour:

    python -m tests.unit.methods.skillmas.evolution_replay
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from grse_graph.errors import ModelRequestRefused
from grse_graph.llm.provider import RoleName, SamplingSettings
from grse_graph.methods.skillmas.diagnosis import LOCAL_TAGS, ClusterAnalysis, Diagnosis
from grse_graph.methods.skillmas.evolution import evaluate_pool, evolve_skills
from grse_graph.methods.skillmas.retention import retain
from grse_graph.methods.skillmas.skills import LINEAGE_KEY, ORIGIN_KEY, TASK_KEY
from grse_graph.methods.skillmas.tables import SkillUtilityTable
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.methods.skillmas.work import EvolutionWork, PoolTally, RoundEvidence
from grse_graph.skills import Skill, SkillLibrary
from tests.unit.methods.skillmas.skillmas_fakes import (
    Calls,
    FakeModel,
    Responder,
    create,
    learn,
    prune,
    refine,
)

FIXTURE = Path(__file__).parents[3] / "fixtures" / "skillmas" / "evolution_replay.json"

# Bodies the scripted optimizer writes; each passes the content checks and shares few content
# words with the others, so the dedup rejects only where a scenario means it to.
BODIES: Mapping[str, str] = MappingProxyType(
    {
        "bridge": (
            "## When to use\nQuestions linking two facts through a shared entity.\n\n## Steps\n"
            "1. Name the bridge entity the question hides.\n2. Resolve it from the first passage.\n"
            "3. Look up the asked attribute of that entity in the second passage.\n\n## Guards\n"
            "Never answer with the bridge entity itself.\n\n## Checks\nThe answer names the "
            "attribute of the resolved entity."
        ),
        "guard": (
            "## When to use\nSingle fact lookups where the passage might lack the fact.\n\n"
            "## Steps\n"
            "1. Quote the sentence stating the fact.\n2. Copy the value verbatim.\n\n## Guards\n"
            "Decline when no sentence states it; do not infer from titles alone.\n\n## Checks\n"
            "A quoted sentence supports every word of the reply."
        ),
        "order": (
            "## When to use\nMulti-hop chains where the order of lookups matters.\n\n## Steps\n"
            "1. Resolve the inner reference first.\n2. Only then search the outer relation.\n"
            "3. Combine both results into one short reply.\n\n## Guards\nDo not search the outer "
            "relation before the inner reference is known.\n\n## Checks\n"
            "Each hop cites its passage."
        ),
        "split": (
            "## When to use\nDate comparisons between exactly two dated events.\n\n## Steps\n"
            "1. Extract both dates with their years.\n2. Order them chronologically.\n"
            "3. Reply with the earlier or later event as asked.\n\n## Guards\n"
            "Ignore undated events entirely.\n\n"
            "## Checks\nBoth years appear in the evidence."
        ),
        "patch": (
            "## When to use\nYes or no questions about membership in a named group.\n\n## Steps\n"
            "1. Find the roster listing the group.\n2. Search it for the member mentioned.\n"
            "3. Reply yes when listed, otherwise no.\n\n## Guards\nRosters from other years do not "
            "count.\n\n## Checks\nThe roster year matches the question's year."
        ),
        "patch2": (
            "## When to use\nCounting questions over enumerated lists.\n\n## Steps\n1. Locate the "
            "enumeration.\n2. Tally each distinct item once.\n3. Reply with the numeral only.\n\n"
            "## Guards\nDuplicates mentioned twice are counted once.\n\n## Checks\n"
            "The tally equals "
            "the distinct items quoted."
        ),
        "refined": (
            "## When to use\nWhenever the original rule applied.\n\n## Steps\n1. Restate what is "
            "asked in five words.\n2. Locate supporting evidence before drafting.\n3. Answer "
            "concisely using the evidence wording.\n\n## Guards\nSkip speculation entirely.\n\n"
            "## Checks\nEvidence wording matches the reply."
        ),
        "hops": (
            "## When to use\nTwo-stage lookups about people and places.\n\n## Steps\n1. Write "
            "down each named person.\n2. Match each person to a birthplace or employer.\n3. Use "
            "the matched pair for the reply.\n\n## Guards\nNever merge namesakes.\n\n## Checks\n"
            "Each pair is stated together somewhere."
        ),
        "passage": (
            "## When to use\nAny question needing passage text.\n\n## Steps\n1. Read the title "
            "list.\n2. Open the most relevant title.\n3. Pass its paragraph along unchanged.\n\n"
            "## Guards\nKeep paragraphs whole.\n\n## Checks\nThe forwarded paragraph mentions "
            "the subject."
        ),
        "retriever": (
            "## When to use\nSearching passages for rare proper nouns.\n\n## Steps\n1. Grep the "
            "exact spelling first.\n2. Then grep each surname alone.\n3. Keep matches mentioning "
            "the context year.\n\n## Guards\nStop after three queries.\n\n## Checks\nEvery kept "
            "match contains the noun."
        ),
    }
)
THIN = "Be careful."
REFUSED = "the server refused this request (scripted)"


def seed(name: str, description: str, body: str) -> Skill:
    """A starting-library skill (no SkillMAS origin)."""
    return Skill.build(name=name, description=description, body=body)


def auto(name: str, body: str, tau: str, origin: str = "failure-pattern", **meta: str) -> Skill:
    """A skill SkillMAS wrote in an earlier round."""
    return Skill.build(
        name=name,
        description=f"{name.replace('-', ' ').capitalize()} for {tau} questions.",
        body=body,
        metadata={ORIGIN_KEY: origin, TASK_KEY: tau, **meta},
    )


def trace(
    rid: str,
    tau: str,
    success: bool,
    used: dict[str, list[str]] | None = None,
    actions: Sequence[str] = (),
    steps: int = 0,
) -> VerifiedTrace:
    return VerifiedTrace(
        rollout_id=rid,
        question_id=rid,
        task_type=tau,
        task=f"question {rid}",
        success=success,
        steps=steps,
        executors=["retriever", "reasoner"],
        used=used or {},
        action_trace=[f"retriever > {a}(q) -> 1 matches" for a in actions],
        error_message="" if success else "wrong",
        summary=f"Q: question {rid} | gold: blue | pred: {'blue' if success else 'red'}",
    )


def diagnosis(
    tau: str, tag: str, cause: str, rollouts: list[str], agents: list[str], skills: list[str]
) -> Diagnosis:
    analysis = ClusterAnalysis.model_validate(
        {
            "pattern": f"{tau} answers go wrong the same way",
            "causal_explanation": f"The {tau} answers skip a step the evidence needs.",
            "proposed_fix": f"A {tag} edit for {tau} questions.",
            "evidence_refs": [1],
            "recommended_action": "create_skill" if tag in LOCAL_TAGS else "scale_agent",
            "implicated_agents": agents,
            "implicated_skills": skills,
            "dominant_cause": cause,
            "unique": True,
            "tag": tag,
        }
    )
    return Diagnosis(
        cluster=f"{tau} :: {'|'.join(agents)}",
        task_type=tau,
        tier="P0",
        priority=0.8,
        rollout_ids=rollouts,
        agents=agents,
        skills=[f"{agents[0]}/{s}" for s in skills],
        analysis=analysis,
        unique=True,
        tag=tag,  # type: ignore[arg-type]
    )


def updated(table: SkillUtilityTable, skill_id: str, rewards: Sequence[float]) -> SkillUtilityTable:
    for reward in rewards:
        table = table.update(skill_id, "t", skill_id.partition("/")[0], reward)
    return table


def _first(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    return found.group(1) if found else ""


def responder(schema: str, messages: list[BaseMessage]) -> dict[str, Any]:
    """The scripted optimizer: its reply follows from the schema and what the prompt names."""
    prompt = str(messages[-1].content)
    if schema == "OwnedSkillDraft":
        tau = _first(r"Task type: ([\w-]+),", prompt)
        replies = {
            "multi-hop": ("reasoner", "Resolve the bridge entity first.", BODIES["bridge"]),
            "single-hop": ("retriever", "Search rare names exactly.", BODIES["retriever"]),
            "counting": ("reasoner", "Too short.", THIN),
            "echo": ("reasoner", "Resolve the bridge entity first.", BODIES["bridge"]),
            "yes-no": ("reasoner", "Bridge again.", BODIES["bridge"]),
        }
        if tau == "refused":
            raise ModelRequestRefused(REFUSED)
        agent, description, body = replies[tau]
        return {"agent": agent, "description": description, "body": body}
    if schema == "DrawnSkill":
        tau = _first(r"fails at ([\w-]+) questions", prompt)
        if "Current skill" in prompt:
            return {"description": "Resolve inner references first.", "body": BODIES["order"]}
        body = {"single-hop": "guard", "temporal": "split", "counting": "patch2"}.get(tau, "patch")
        return {"description": f"Patch for {tau} questions.", "body": BODIES[body]}
    if schema == "RefinedBody":
        name = _first(r"Skill ([\w-]+) has success rate", prompt)
        return {"body": THIN if name == "weak-thin" else BODIES["refined"]}
    if schema == "NarrowedDescription":
        return {"description": "Only questions comparing two dated events."}
    raise AssertionError(f"unexpected schema {schema}")


@dataclass
class Requests:
    """What every optimizer call was asked, in order."""

    log: list[dict[str, Any]] = field(default_factory=list)


class RecordingModel(FakeModel):
    """A fake model that also records the request it received."""

    requests: Any
    request: dict[str, Any]

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.requests.log.append(
            {
                **self.request,
                "schema": self.bound[0] if self.bound else "text",
                "messages": [
                    {"type": m.type, "lines": str(m.content).split("\n")} for m in messages
                ],
            }
        )
        return super()._generate(messages, *args, **kwargs)


class RecordingProvider:
    """A `ChatModelProvider` whose models answer by `responder` and record each request."""

    def __init__(self, answer: Responder = responder) -> None:
        self.requests = Requests()
        self.calls = Calls()
        self.answer = answer

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        request = {
            "role": role,
            "temperature": sampling.temperature if sampling is not None else None,
            "max_tokens": max_tokens,
        }
        return RecordingModel(
            role=role,
            calls=self.calls,
            responder=self.answer,
            actor=lambda messages: "",
            requests=self.requests,
            request=request,
        )


@dataclass(frozen=True)
class Scenario:
    """One fixed round: the workspace, the evidence and the evolution steps to run."""

    work: Callable[[], EvolutionWork]
    evidence: Callable[[], RoundEvidence]
    steps: Sequence[str]


def _evidence(
    traces: list[VerifiedTrace], diagnoses: list[Diagnosis], agents: Sequence[str] = ()
) -> RoundEvidence:
    return RoundEvidence(
        round=2,
        traces=traces,
        retained=retain(traces, {}).items,
        diagnoses=diagnoses,
        agents=list(agents or ["retriever", "reasoner"]),
        final_agent="reasoner",
        domain="a question-answering agent team (replay)",
    )


def _round_work() -> EvolutionWork:
    reasoner = [
        # Five active skills share a word with the round's queries: the prompts show four.
        seed("answer-format", "Reply to a question with the short answer only.", BODIES["refined"]),
        auto("bridge-facts", BODIES["hops"], "multi-hop"),
        auto("old-dates", BODIES["split"] + "\nOlder question wording.", "temporal", "evolution"),
        auto("compare-sizes", BODIES["patch2"] + "\nSizes too.", "comparison", "evolution"),
        auto("compare-old", BODIES["patch"] + "\nOld rule.", "comparison", "evolution"),
    ]
    table = SkillUtilityTable()
    table = updated(table, "reasoner/answer-format", [0, 0, 0])
    table = updated(table, "reasoner/bridge-facts", [0, 0, 0])
    table = updated(table, "reasoner/old-dates", [0, 0, 0, 0, 0, 0])
    table = updated(table, "reasoner/compare-sizes", [1])
    return EvolutionWork(
        libraries={
            "retriever": SkillLibrary.build(
                "retriever", [seed("find-passage", "Find the passage.", BODIES["passage"])], 4
            ),
            "reasoner": SkillLibrary.build("reasoner", reasoner, 10),
        },
        status={"reasoner": {"compare-sizes": "shadow", "compare-old": "active"}},
        table=table,
        parents={"reasoner/compare-sizes": "reasoner/compare-old"},
    )


def _round_evidence() -> RoundEvidence:
    traces = [
        trace("m1", "multi-hop", True, actions=["grep", "grep", "respond"], steps=2),
        trace("m2", "multi-hop", False, {"reasoner": ["bridge-facts"]}, ["respond"], 0),
        trace("m3", "multi-hop", False, {"reasoner": ["bridge-facts"]}, ["grep", "respond"], 1),
        trace("s1", "single-hop", True, actions=["grep", "respond"], steps=1),
        trace("s2", "single-hop", False, actions=["respond"]),
        trace("t1", "temporal", False, actions=["respond"]),
        *[trace(f"c{i}", "comparison", True, {"reasoner": ["compare-sizes"]}) for i in range(3)],
    ]
    diagnoses = [
        diagnosis(
            "multi-hop",
            "reorder-step",
            "incorrect action order",
            ["m2", "m3"],
            ["reasoner"],
            ["bridge-facts"],
        ),
        diagnosis("single-hop", "add-guard", "missing precondition", ["s2"], ["reasoner"], []),
        diagnosis("temporal", "handoff-to-structure", "bad executor assignment", ["t1"], ["x"], []),
    ]
    return _evidence(traces, diagnoses)


def _learn_work() -> EvolutionWork:
    return EvolutionWork(
        libraries={
            "retriever": SkillLibrary.build(
                "retriever", [seed("find-passage", "Find the passage.", BODIES["retriever"])], 1
            ),
            "reasoner": SkillLibrary.build(
                "reasoner", [auto("echo-learned-r2", BODIES["order"], "echo")], 6
            ),
        },
        status={},
        table=SkillUtilityTable(),
    )


def _learn_evidence(taus: Sequence[str], wins: int = 1) -> Callable[[], RoundEvidence]:
    """Per task type `wins` successes and one failure."""

    def build() -> RoundEvidence:
        traces = []
        for tau in taus:
            for i in range(wins):
                traces.append(trace(f"{tau}-s{i}", tau, True, actions=["grep", "respond"], steps=1))
            traces.append(trace(f"{tau}-f", tau, False, actions=["respond"]))
        return _evidence(traces, [])

    return build


def _create_work() -> EvolutionWork:
    reasoner = [
        auto("date-rule", BODIES["order"] + "\nAll date questions.", "temporal"),
        auto("span-rule", BODIES["guard"] + "\nAll span questions.", "span"),
    ]
    return EvolutionWork(
        libraries={
            "retriever": SkillLibrary.build(
                "retriever", [seed("find-passage", "Find the passage.", BODIES["retriever"])], 1
            ),
            "reasoner": SkillLibrary.build("reasoner", reasoner, 6),
        },
        status={},
        table=SkillUtilityTable(),
    )


def _code_rule_work() -> EvolutionWork:
    work = _create_work()
    taken = auto("counting-rl-r2", BODIES["patch2"], "counting")
    work.libraries["reasoner"] = work.libraries["reasoner"].add(taken)
    return work


def _cap_work() -> EvolutionWork:
    """The reasoner has room, but the team holds the cap of 15 written skills."""
    work = _learn_work()
    fillers = [auto(f"filler-{i}", BODIES["patch"], "filler", "evolution") for i in range(14)]
    work.libraries["specialist-x"] = SkillLibrary.build("specialist-x", fillers)
    work.status["specialist-x"] = {f.name: "shadow" for f in fillers}
    return work


def _create_evidence() -> RoundEvidence:
    traces = [
        trace("t1", "temporal", False, {"reasoner": ["date-rule"]}, ["respond"]),
        trace("t2", "temporal", False, {"reasoner": ["date-rule"]}, ["respond"]),
        trace("p1", "span", False, {"reasoner": ["span-rule"]}, ["respond"]),
        trace("p2", "span", False, {"reasoner": ["span-rule"]}, ["respond"]),
        trace("y1", "yes-no", False, actions=["grep", "respond"], steps=1),
        trace("ok", "other", True, actions=["grep", "respond"], steps=1),
    ]
    diagnoses = [
        diagnosis(
            "temporal", "split-skill", "skill conflict", ["t1", "t2"], ["reasoner"], ["date-rule"]
        ),
        diagnosis(
            "span",
            "tighten-retrieval",
            "misleading retrieval match",
            ["p1", "p2"],
            ["reasoner"],
            ["span-rule"],
        ),
        diagnosis("yes-no", "add-guard", "missing precondition", ["y1"], ["retriever"], []),
    ]
    return _evidence(traces, diagnoses)


def _code_rule_evidence() -> RoundEvidence:
    traces = [
        trace("y1", "yes-no", False, actions=["respond"]),
        trace("y2", "yes-no", True, actions=["grep", "respond"], steps=1),
        trace("n1", "counting", False, actions=["respond"]),
    ]
    handoff = diagnosis(
        "counting", "handoff-to-structure", "bad executor assignment", ["n1"], ["reasoner"], []
    )
    return _evidence(traces, [handoff])


def _forge_work() -> EvolutionWork:
    reasoner = [
        auto("pre-touched", BODIES["guard"], "span"),
        auto("weak-thin", BODIES["order"], "multi-hop"),
        auto("weak-ok", BODIES["bridge"], "multi-hop"),
        auto("weak-late", BODIES["patch"], "yes-no"),
        auto("dead", BODIES["patch2"], "counting", "evolution"),
        auto("young", BODIES["split"], "temporal", "evolution"),
        auto("middling", BODIES["retriever"], "span", "evolution"),
        seed("seed-rule", "A seed.", BODIES["refined"]),
    ]
    copy = auto("weak-ok", BODIES["bridge"], "multi-hop", **{LINEAGE_KEY: "reasoner/weak-ok"})
    waiting = auto("waiting", BODIES["patch"] + "\nWaits.", "yes-no", "evolution")
    table = SkillUtilityTable()
    # Table order decides refine's three slots: a removed skill takes none, the seed takes one
    # unrefined, so weak-late (fourth) is never reached.
    table = updated(table, "reasoner/gone", [0, 0, 0])
    table = updated(table, "reasoner/seed-rule", [0, 0, 0, 0, 0])
    table = updated(table, "reasoner/weak-thin", [0, 0, 0])
    table = updated(table, "reasoner/weak-ok", [0, 0, 0])
    table = updated(table, "reasoner/weak-late", [0, 0, 0])
    table = updated(table, "reasoner/pre-touched", [0, 0, 0])
    table = updated(table, "reasoner/dead", [0, 0, 0, 0, 0])
    table = updated(table, "reasoner/young", [0, 0, 0, 0])
    table = updated(table, "reasoner/middling", [1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    table = updated(table, "specialist-span/waiting", [0, 0])
    work = EvolutionWork(
        libraries={
            "retriever": SkillLibrary.empty("retriever", 4),
            "reasoner": SkillLibrary.build("reasoner", reasoner, 10),
            "specialist-span": SkillLibrary.build("specialist-span", [copy, waiting], 4),
        },
        status={"reasoner": {"dead": "active"}, "specialist-span": {"waiting": "shadow"}},
        table=table,
        tallies={
            "reasoner/dead": PoolTally(uses=1),
            "specialist-span/waiting": PoolTally(uses=2, failed_evaluations=0),
        },
    )
    work.touched.add(("span", "reasoner", "pre-touched"))
    return work


def _forge_evidence() -> RoundEvidence:
    traces = [
        trace("w1", "multi-hop", False, {"specialist-span": ["weak-ok"]}, ["respond"]),
        trace("w2", "multi-hop", True, {"reasoner": ["weak-thin"]}, ["respond"]),
        trace("w3", "multi-hop", False, {"reasoner": ["weak-thin"]}, ["grep", "respond"], 1),
        *[trace(f"u{i}", "yes-no", False, {"specialist-span": ["waiting"]}) for i in range(3)],
    ]
    return _evidence(traces, [], ["retriever", "reasoner", "specialist-span"])


SCENARIOS: Mapping[str, Scenario] = MappingProxyType(
    {
        "round": Scenario(
            _round_work, _round_evidence, ["learn", "create", "refine", "prune", "pool"]
        ),
        "learn_edges": Scenario(
            _learn_work, _learn_evidence(["echo", "refused", "single-hop"]), ["learn"]
        ),
        "learn_rejections": Scenario(
            # Four successes each: the prompt shows three of them.
            _learn_work,
            _learn_evidence(["multi-hop", "counting", "yes-no"], wins=4),
            ["learn"],
        ),
        "create_local_tags": Scenario(_create_work, _create_evidence, ["create"]),
        "learn_cap": Scenario(_cap_work, _learn_evidence(["multi-hop"]), ["learn"]),
        "create_code_rule": Scenario(_code_rule_work, _code_rule_evidence, ["create_code_rule"]),
        "forge": Scenario(_forge_work, _forge_evidence, ["refine", "prune", "pool_disable"]),
    }
)


async def _run_step(
    step: str, work: EvolutionWork, evidence: RoundEvidence, provider: RecordingProvider
) -> None:
    if step == "evolve":
        await evolve_skills(work, evidence, provider)
    elif step == "learn":
        await learn(work, evidence, provider)
    elif step == "create":
        await create(work, evidence, provider)
    elif step == "create_code_rule":
        await create(work, evidence, provider, require_diagnosis=False)
    elif step == "refine":
        await refine(work, evidence, provider)
    elif step == "prune":
        prune(work)
    elif step == "pool":
        evaluate_pool(work, evidence.traces, 3, 0.6)
    elif step == "pool_disable":
        evaluate_pool(work, evidence.traces, 3, 0.6, counting="cumulative", disable_after=1)
    else:
        raise AssertionError(f"unknown step {step}")


def library_edits(
    before: Mapping[str, SkillLibrary], after: Mapping[str, SkillLibrary]
) -> dict[str, dict[str, Any]]:
    """Per agent whose library changed: skills added or changed (SKILL.md text in lines),
    skills removed (names), and whether the whole library was added or dropped."""
    edits: dict[str, dict[str, Any]] = {}
    for agent in dict.fromkeys([*before, *after]):
        old = before.get(agent, SkillLibrary.empty(agent))
        new = after.get(agent, SkillLibrary.empty(agent))
        written = {
            s.name: s.to_markdown().split("\n")
            for s in new.skills
            if not old.has(s.name) or old.get(s.name) != s
        }
        removed = [name for name in old.names() if not new.has(name)]
        if written or removed or (agent in before) != (agent in after):
            edits[agent] = {"written": written, "removed": removed, "present": agent in after}
    return edits


def snapshot(
    before: Mapping[str, SkillLibrary], work: EvolutionWork, requests: Requests
) -> dict[str, Any]:
    """The optimizer requests and the workspace after the steps as JSON values."""
    return {
        "requests": requests.log,
        "actions": [a.model_dump(mode="json") for a in work.actions],
        "library_edits": library_edits(before, work.libraries),
        "status": work.status,
        "table": {
            skill_id: {"q": round(record.overall.q, 6), "n": record.overall.n}
            for skill_id, record in work.table.skills.items()
        },
        "parents": work.parents,
        "new_skills": work.new_skills,
        "promoted": work.promoted,
        "repaired_types": work.repaired_types,
        "pool": [d.model_dump(mode="json") for d in work.pool],
        "touched": sorted(list(key) for key in work.touched),
        "tallies": {ref: t.model_dump(mode="json") for ref, t in work.tallies.items()},
        "parked": [p.model_dump(mode="json") for p in work.parked],
        "demoted": sorted(work.demoted),
    }


def run_scenario(
    name: str, answer: Responder = responder, steps: Sequence[str] | None = None
) -> dict[str, Any]:
    """One scenario through the current evolution code (the optimizer answering by `answer`;
    other `steps` than the scenario's, e.g. `evolve` for the round's own entry point),
    snapshotted."""
    scenario = SCENARIOS[name]
    work, evidence, provider = scenario.work(), scenario.evidence(), RecordingProvider(answer)
    before = dict(work.libraries)

    async def run() -> None:
        for step in scenario.steps if steps is None else steps:
            await _run_step(step, work, evidence, provider)

    asyncio.run(run())
    return snapshot(before, work, provider.requests)


def record_all() -> dict[str, Any]:
    """Every scenario's snapshot, by scenario name."""
    return {name: run_scenario(name) for name in SCENARIOS}


def to_json(value: Any, indent: str = "") -> str:
    """`value` as JSON with every container that fits in 96 characters on one line (so each
    action, pool decision or prompt line reads as one line of the fixture)."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(indent) + len(flat) <= 96 or not isinstance(value, dict | list) or not value:
        return flat
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {to_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return "[\n" + ",\n".join(inner + to_json(v, inner) for v in value) + "\n" + indent + "]"


if __name__ == "__main__":
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(to_json(record_all()) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
