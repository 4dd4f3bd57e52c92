"""Pack export/import, the Agent Skills reference validator, and the shipped example skills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import skills_ref

import grse_graph
from grse_graph.errors import SkillError
from grse_graph.skills import (
    AGENT_KEY,
    MANIFEST_FILE,
    PackManifest,
    Skill,
    SkillLibrary,
    export_pack,
    import_pack,
    inspect_path,
    load_libraries,
    validate_path,
)

EXAMPLES = Path(__file__).parents[3] / "skills" / "examples" / "hotpotqa"


def _libraries() -> dict[str, SkillLibrary]:
    retriever = SkillLibrary(
        agent="retriever",
        limit=4,
        skills=[
            Skill(
                name="bridge-entity",
                description="Find the bridge entity: yes, even with colons and 'quotes'.",
                body="# Bridge\n\nName it.",
                license="Apache-2.0",
                compatibility="Any chat model with tool calling.",
                allowed_tools=["grep", "read_file"],
                metadata={"author": "grse", "version": "1.0", AGENT_KEY: "retriever"},
                resources={
                    "references/examples.md": b"# Examples\n",
                    "assets/logo.bin": b"\x89\x00",
                },
            )
            .with_utility(0.5)
            .with_provenance("induced")
            .with_iteration(2),
        ],
    )
    reasoner = SkillLibrary(
        agent="reasoner",
        skills=[
            Skill(
                name="short-answer",
                description="Übersicht — kurze Antwort. 短い答え。",
                body="Span only.",
            ),
            Skill(name="yes-no", description="Multi-line\ndescription.", body="yes or no"),
        ],
    )
    return {"retriever": retriever, "reasoner": reasoner}


def test_export_layout_and_manifest(tmp_path: Path) -> None:
    libraries = _libraries()
    pack = export_pack(libraries, tmp_path / "pack")
    assert (pack / "retriever" / "skills" / "bridge-entity" / "SKILL.md").is_file()
    assert (
        pack / "retriever" / "skills" / "bridge-entity" / "references" / "examples.md"
    ).is_file()
    assert (pack / "reasoner" / "skills" / "yes-no" / "SKILL.md").is_file()
    manifest = PackManifest.model_validate_json((pack / MANIFEST_FILE).read_bytes())
    assert manifest.grse_graph_version == grse_graph.__version__
    assert [a.agent for a in manifest.agents] == ["reasoner", "retriever"]
    retriever = manifest.agents[1]
    assert retriever.limit == 4
    assert retriever.library_hash == libraries["retriever"].content_hash()
    assert [(s.name, s.content_hash) for s in retriever.skills] == [
        ("bridge-entity", libraries["retriever"].get("bridge-entity").content_hash())
    ]


def test_import_gives_back_equal_libraries(tmp_path: Path) -> None:
    libraries = _libraries()
    pack = export_pack(libraries, tmp_path / "pack")
    assert import_pack(pack) == libraries
    assert load_libraries(pack) == libraries
    assert validate_path(pack) == []
    assert inspect_path(pack).skill_count == 3


def test_every_exported_skill_passes_the_reference_validator(tmp_path: Path) -> None:
    pack = export_pack(_libraries(), tmp_path / "pack")
    folders = sorted(p.parent for p in pack.glob("*/skills/*/SKILL.md"))
    assert len(folders) == 3
    for folder in folders:
        assert skills_ref.validate(folder) == [], folder
        properties = skills_ref.read_properties(folder)
        assert properties.name == folder.name
        assert properties.description == Skill.load(folder).description.strip()


def test_shipped_examples_pass_both_validators() -> None:
    libraries = load_libraries(EXAMPLES)
    assert set(libraries) == {"retriever", "reasoner"}
    assert all(2 <= len(library) <= 4 for library in libraries.values())
    for agent, library in libraries.items():
        for skill in library.skills:
            assert skill.agent == agent
            assert skills_ref.validate(EXAMPLES / agent / skill.name) == []
    assert validate_path(EXAMPLES) == []


def test_edited_pack_is_detected(tmp_path: Path) -> None:
    pack = export_pack(_libraries(), tmp_path / "pack")
    skill_file = pack / "reasoner" / "skills" / "yes-no" / "SKILL.md"
    skill_file.write_text(skill_file.read_text(encoding="utf-8") + "extra\n", encoding="utf-8")
    problems = validate_path(pack)
    assert len(problems) == 1 and "edited after export" in problems[0]
    with pytest.raises(SkillError, match=r"yes-no: content hash .* edited after export"):
        import_pack(pack)


def test_unlisted_agent_and_bad_manifest_are_detected(tmp_path: Path) -> None:
    pack = export_pack(_libraries(), tmp_path / "pack")
    (pack / "stranger" / "skills").mkdir(parents=True)
    assert validate_path(pack) == [f"{pack / 'stranger'}: not listed in manifest.json"]
    data = json.loads((pack / MANIFEST_FILE).read_text(encoding="utf-8"))
    data["format_version"] = 9
    (pack / MANIFEST_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SkillError, match=r"manifest\.json: format_version: "):
        import_pack(pack)


def test_export_replaces_an_earlier_pack_but_not_other_folders(tmp_path: Path) -> None:
    libraries = _libraries()
    pack = export_pack(libraries, tmp_path / "pack")
    smaller = {"reasoner": libraries["reasoner"]}
    export_pack(smaller, pack)
    assert import_pack(pack) == smaller
    assert not (pack / "retriever").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(SkillError, match="not a skill pack; refusing to overwrite"):
        export_pack(libraries, other)
    assert (other / "keep.txt").read_text(encoding="utf-8") == "mine"


def test_library_filed_under_the_wrong_agent_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="filed under 'reasoner'"):
        export_pack({"reasoner": SkillLibrary.empty("retriever")}, tmp_path / "pack")
