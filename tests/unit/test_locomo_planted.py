"""The paper's perturbed LoCoMo single-hop library (§5.3, App. C, Table 5) shipped with the
package: it loads and validates, its names and kinds are Table 5's, each skill belongs to the
agent the paper gives it, and the helpful skills alone are the reference library of Table 4."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from grse_graph.errors import TaskError
from grse_graph.skills import SKILL_FILE, validate_path
from grse_graph.skills.limits import NAME_PATTERN
from grse_graph.tasks.planted import PlantedLibrary, locomo_planted
from grse_graph.team.spec import FIRST_AGENT, SECOND_AGENT

REPO = Path(__file__).resolve().parents[2]
KIND_WORDS = re.compile(r"helpful|harmful|irrelevant|planted|perturb", re.IGNORECASE)

TABLE5 = {
    # Table 5 (grse.txt:243-251): label -> (agent, kind); Agent 1 is the retriever, Agent 2
    # the reasoner (App. F, grse.txt:445).
    "context expansion": (FIRST_AGENT, "helpful"),
    "latest session": (FIRST_AGENT, "harmful"),
    "equation solving": (FIRST_AGENT, "irrelevant"),
    "answer fidelity": (SECOND_AGENT, "helpful"),
    "complete sentence": (SECOND_AGENT, "harmful"),
    "verbatim guard": (SECOND_AGENT, "harmful"),
}
FULL_NAMES = {
    # The names the text spells out (grse.txt:413, 417).
    "context expansion": "multi-hop-context-expansion",
    "latest session": "focused-latest-session-retrieval",
    "verbatim guard": "verbatim-evidence-guard",
}


@pytest.fixture(scope="module")
def planted() -> PlantedLibrary:
    return locomo_planted()


def test_it_is_a_locomo_library_with_an_about_line(planted: PlantedLibrary) -> None:
    assert planted.task == "locomo"
    assert planted.about and "\n" not in planted.about
    assert "Figure 4" in planted.about and "not in the text" in planted.about


def test_names_kinds_and_agents_are_table5s(planted: PlantedLibrary) -> None:
    found = {entry.paper_name: (entry.agent, entry.kind) for entry in planted.skills}
    assert found == TABLE5
    for entry in planted.skills:
        assert entry.paper_name is not None
        expected = FULL_NAMES.get(entry.paper_name, entry.paper_name.replace(" ", "-"))
        assert entry.skill == expected and NAME_PATTERN.fullmatch(entry.skill)
        assert entry.label == entry.paper_name
        assert entry.paper_lines, entry.skill


def test_each_agent_has_one_helpful_and_two_harmful_or_irrelevant(
    planted: PlantedLibrary,
) -> None:
    libraries = planted.libraries()
    assert set(libraries) == {FIRST_AGENT, SECOND_AGENT}
    for agent, library in libraries.items():
        kinds = Counter(planted.kind_of(agent, name) for name in library.names())
        assert len(library) == 3 and kinds["helpful"] == 1
        assert kinds["harmful"] + kinds["irrelevant"] == 2
    totals = Counter(entry.kind for entry in planted.skills)
    assert totals == {"helpful": 2, "harmful": 3, "irrelevant": 1}
    text = planted.composition()
    assert f"{FIRST_AGENT}: 1 helpful, 1 harmful and 1 irrelevant skill" in text
    assert f"{SECOND_AGENT}: 1 helpful and 2 harmful skills" in text


def test_library_limit_leaves_one_free_slot(planted: PlantedLibrary) -> None:
    # App. C: L = 4 and three skills per agent, so one induction slot stays free.
    assert all(len(library) == 4 - 1 for library in planted.libraries().values())


def test_helpful_alone_keeps_every_agent_and_only_its_helpful_skill(
    planted: PlantedLibrary,
) -> None:
    alone = planted.libraries(kinds=["helpful"])
    assert {agent: library.names() for agent, library in alone.items()} == {
        FIRST_AGENT: ["multi-hop-context-expansion"],
        SECOND_AGENT: ["answer-fidelity"],
    }
    full = planted.libraries()
    for agent, library in alone.items():
        for skill in library.skills:
            assert skill == full[agent].get(skill.name)  # the same bodies, not rewritten
    without = planted.libraries(kinds=["harmful"])
    assert without[FIRST_AGENT].names() == ["focused-latest-session-retrieval"]
    with pytest.raises(TaskError, match="unknown kind 'neutral'"):
        planted.libraries(kinds=["neutral"])  # type: ignore[list-item]


def test_pack_validates_and_does_not_reveal_kinds(planted: PlantedLibrary) -> None:
    assert validate_path(planted.pack_path()) == []
    skill_files = sorted(planted.pack_path().rglob(SKILL_FILE))
    assert len(skill_files) == len(planted.skills)
    for path in planted.pack_path().rglob("*"):
        assert not KIND_WORDS.search(path.name), path
        if path.is_file():
            assert not KIND_WORDS.search(path.read_text(encoding="utf-8")), path


def test_training_starts_from_the_packs_library_folders(planted: PlantedLibrary) -> None:
    folders = planted.library_folders()
    assert set(folders) == {FIRST_AGENT, SECOND_AGENT}
    for agent, folder in folders.items():
        names = sorted(p.name for p in Path(folder).iterdir())
        assert names == sorted(e.skill for e in planted.skills if e.agent == agent)


def test_the_pack_ships_as_package_data() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["grse_graph"]
    assert "tasks/locomo_planted/planted.json" in patterns
    assert "tasks/locomo_planted/planted/**/*" in patterns
