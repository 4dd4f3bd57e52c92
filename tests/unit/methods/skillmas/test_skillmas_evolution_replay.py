"""Replay of recorded SkillMAS evolution rounds: the fixture was taken from the evolution code
as it was before its operators ran on the shared operator driver; the same scenarios run on
the current code must ask the optimizer the same things and make the same library edits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from tests.unit.methods.skillmas.evolution_replay import (
    BODIES,
    FIXTURE,
    SCENARIOS,
    responder,
    run_scenario,
)


def recorded() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_fixture_holds_every_scenario_and_every_operator_path() -> None:
    fixture = recorded()
    assert sorted(fixture) == sorted(SCENARIOS)
    kinds = {a["kind"] for s in fixture.values() for a in s["actions"]}
    assert kinds >= {
        "learn",
        "create",
        "repair",
        "tighten",
        "refine",
        "prune",
        "promote",
        "disable",
        "rejected",
        "noop",
    }
    schemas = {r["schema"] for s in fixture.values() for r in s["requests"]}
    assert schemas == {"OwnedSkillDraft", "DrawnSkill", "RefinedBody", "NarrowedDescription"}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_recorded_round_replays_to_the_same_requests_and_edits(name: str) -> None:
    expected = recorded()[name]
    replayed = run_scenario(name)
    # Part by part first, so a failure names what differs.
    for part in expected:
        assert replayed[part] == expected[part], f"{name}: {part} differs from the recording"
    assert replayed == expected


def test_the_rounds_own_entry_point_replays_the_recorded_round() -> None:
    """`evolve_skills` (what `round.update_round` runs) takes the operators in the order the
    round was recorded in: learn, create, refine, prune; then the pool."""
    assert run_scenario("round", steps=["evolve", "pool"]) == recorded()["round"]


def test_a_different_optimizer_reply_shows_in_the_snapshot() -> None:
    """The snapshot sees what an operator wrote, not only that it acted."""

    def other(schema: str, messages: list[BaseMessage]) -> dict[str, Any]:
        if schema == "RefinedBody":
            return {"body": BODIES["patch"]}
        return responder(schema, messages)

    assert run_scenario("forge", other)["library_edits"] != recorded()["forge"]["library_edits"]
