"""Row 19 B: a routed specialist is an alternative executor for one seed agent's slot, chosen
per question by the code's softmax over Q^a (sampled in training, argmax otherwise)."""

from __future__ import annotations

import math
import random

from grse_graph.methods.skillmas.restructure import decide
from grse_graph.methods.skillmas.round import apply_decision
from grse_graph.methods.skillmas.tables import ExecutorUtilityTable
from grse_graph.methods.skillmas.team import (
    TeamMember,
    build_team,
    route,
    route_probabilities,
    routing_slot,
    running_members,
)
from grse_graph.skills import SkillLibrary
from grse_graph.team import default_team
from tests.unit.methods.skillmas.skillmas_fakes import TwoTypeTask
from tests.unit.methods.skillmas.test_skillmas_restructure import SEEDS, artifacts, failures

SPECIALIST = TeamMember(
    name="specialist-multi-hop",
    seed=False,
    role="You are it.",
    targets=["multi-hop"],
    slot="reasoner",
)
TEAM = [SEEDS[0], SEEDS[1], SPECIALIST]


def table() -> ExecutorUtilityTable:
    # reasoner 0.5 (never updated); the specialist starts as an extension agent at 0.6 / 0.7
    return ExecutorUtilityTable().initialize_extension("specialist-multi-hop", 0.5, ["multi-hop"])


def test_softmax_over_executor_utility_with_the_off_target_penalty() -> None:
    on = route_probabilities(table(), ["reasoner", "specialist-multi-hop"], "multi-hop")
    expected = math.exp(0.6 / 0.5) / (math.exp(0.6 / 0.5) + math.exp(0.5 / 0.5))
    assert on[0][0] == "specialist-multi-hop" and round(on[0][1], 6) == round(expected, 6)
    off = route_probabilities(table(), ["reasoner", "specialist-multi-hop"], "single-hop")
    assert off[0][0] == "reasoner"  # 0.6 x 0.5 = 0.3 off target
    assert route_probabilities(table(), ["reasoner"], "multi-hop") == [("reasoner", 1.0)]


def test_route_takes_the_argmax_without_rng_and_samples_with_one() -> None:
    assert route(TEAM, table(), "multi-hop") == {"reasoner": "specialist-multi-hop"}
    assert route(TEAM, table(), "single-hop") == {"reasoner": "reasoner"}
    assert route(SEEDS, table(), "multi-hop") == {}  # no routed specialist, nothing to route
    rng = random.Random(0)
    picks = [route(TEAM, table(), "multi-hop", rng=rng)["reasoner"] for _ in range(2000)]
    share = picks.count("specialist-multi-hop") / len(picks)
    assert abs(share - 0.5498) < 0.04  # e^1.2 / (e^1.2 + e^1.0)


def test_slot_is_the_lowest_utility_implicated_seed_ties_to_the_later() -> None:
    q = ExecutorUtilityTable()
    assert routing_slot(SEEDS, ["retriever", "reasoner"], q, "multi-hop") == "reasoner"
    q = q.update("reasoner", "multi-hop", 1.0)
    assert routing_slot(SEEDS, ["retriever", "reasoner"], q, "multi-hop") == "retriever"
    assert routing_slot(SEEDS, [], q, "multi-hop") == "retriever"


def test_apply_add_in_route_mode_and_the_team_it_runs() -> None:
    libraries = {a.name: SkillLibrary.empty(a.name, 4) for a in SEEDS}
    decision = decide(artifacts(failures(3)), SEEDS, mode="code")
    applied, members, libs, q = apply_decision(
        decision, list(SEEDS), libraries, ExecutorUtilityTable(), 4, {}, "route"
    )
    assert applied.slot == "reasoner" and applied.agent == "specialist-multi-hop"
    assert [m.name for m in members] == ["retriever", "reasoner", "specialist-multi-hop"]
    assert members[2].slot == "reasoner" and "taking the place of reasoner" in members[2].role
    assert q.agents["specialist-multi-hop"].is_extension
    assert [m.name for m in running_members(members, "multi-hop")] == ["retriever", "reasoner"]
    routed = {"reasoner": "specialist-multi-hop"}
    running = running_members(members, "multi-hop", routed)
    assert [m.name for m in running] == ["retriever", "specialist-multi-hop"]
    seed_team = default_team(TwoTypeTask())
    team = build_team(seed_team, members, libs, "multi-hop", routed=routed)
    assert team.agent_names == ["retriever", "specialist-multi-hop"]
    spec = team.agent("specialist-multi-hop")
    reasoner = seed_team.agent("reasoner")
    assert spec.role.startswith(members[2].role) and reasoner.role in spec.role
    assert spec.tools == reasoner.tools and spec.max_tool_calls == reasoner.max_tool_calls
