"""TeamSpec construction, the default team per task kind, topology registry, exported graph."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from pydantic import ValidationError

from grse_graph.errors import ConfigError
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.team import TOPOLOGIES, AgentSpec, TeamSpec, default_team
from grse_graph.team.prompts import load_prompt
from tests.unit.team.team_fakes import FakeTask, question

REPO = Path(__file__).resolve().parents[3]


def library(agent: str, *names: str) -> SkillLibrary:
    skills = [Skill.build(name=n, description="d", body="b") for n in names]
    return SkillLibrary.build(agent, skills)


def test_default_team_for_passages() -> None:
    team = default_team(FakeTask([question("q")], kind="passages"))
    first, second = team.agents
    assert (first.name, second.name) == ("retriever", "reasoner")
    assert first.role == load_prompt("passages_reasoner")
    assert second.role == load_prompt("passages_answerer")
    assert not first.force_first_tool and not second.sees_tool_results
    assert team.topology == "sequential"


def test_default_team_for_conversations_forces_the_retrievers_search() -> None:
    team = default_team(FakeTask([question("q")], kind="conversation"))
    first, second = team.agents
    assert first.role == load_prompt("conversation_retriever")
    assert (first.max_tool_calls, first.force_first_tool) == (3, True)
    assert second.role == load_prompt("conversation_reasoner")
    assert (second.max_tool_calls, second.sees_tool_results) == (0, False)


def test_default_team_for_mixed_tasks_has_both_roles() -> None:
    first, second = default_team(FakeTask([question("q")], kind="mixed")).agents
    assert first.role_for("conversation") == load_prompt("conversation_retriever")
    assert first.role_for("passages") == load_prompt("passages_reasoner")
    assert second.role_for("conversation") == load_prompt("conversation_reasoner")


def test_default_team_takes_libraries_and_skill_mode() -> None:
    libs = {"reasoner": library("reasoner", "short-answer")}
    team = default_team(FakeTask([question("q")]), libs, skill_mode="tool")
    assert team.libraries()["reasoner"].names() == ["short-answer"]
    assert team.libraries()["retriever"].names() == []
    assert {a.skill_mode for a in team.agents} == {"tool"}


def test_default_team_rejects_unknown_agent_library() -> None:
    with pytest.raises(ConfigError, match="no agent 'critic'"):
        default_team(FakeTask([question("q")]), {"critic": library("critic")})


def test_with_library_replaces_only_that_agent() -> None:
    team = default_team(FakeTask([question("q")]))
    changed = team.with_library("retriever", library("retriever", "find-bridge"))
    assert changed.libraries()["retriever"].names() == ["find-bridge"]
    assert team.libraries()["retriever"].names() == []
    assert changed.agent("reasoner") == team.agent("reasoner")
    with pytest.raises(KeyError, match="no agent 'x'"):
        team.with_library("x", library("x"))


def test_agent_names_must_be_unique() -> None:
    a = AgentSpec(name="a", role="r", library=SkillLibrary.empty("a"))
    with pytest.raises(ValidationError, match="repeated: a"):
        TeamSpec(agents=(a, a))


def test_unknown_topology_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown team topology 'peers'"):
        TOPOLOGIES.resolve("peers")


def test_exported_graph_imports_without_a_server_and_has_no_checkpointer() -> None:
    spec = importlib.util.spec_from_file_location("graphs_team", REPO / "graphs" / "team.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # Its nodes are the Studio wrapper's (grse_graph.studio, tested with it).
    assert module.graph.checkpointer is None
