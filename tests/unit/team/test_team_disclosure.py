"""Skill disclosure modes (inline, tool, path) shared by the team and the middleware."""

from __future__ import annotations

import asyncio

import pytest

from grse_graph.errors import ConfigError
from grse_graph.llm.provider import SamplingSettings
from grse_graph.skills import Skill, SkillLibrary, SkillUseRecorder, render_index, render_inline
from grse_graph.team import AgentSpec, TeamSpec, run_rollout
from grse_graph.team.disclosure import disclose, read_skill_file, render_paths, shipped_text
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.team.team_fakes import FakeTask, question


def library() -> SkillLibrary:
    skill = Skill.build(
        name="find-bridge",
        description="Find the bridge entity.",
        body="Name the entity that links the passages.",
        resources={"references/example.md": b"An example."},
    ).with_utility(0.5)
    return SkillLibrary.build("retriever", [skill])


def test_each_mode_renders_with_its_renderer_and_tool() -> None:
    inline = disclose("inline", "Role.", library())
    tool = disclose("tool", "Role.", library())
    path = disclose("path", "Role.", library())

    assert (inline.system_prompt, inline.tool, inline.max_loads) == (
        render_inline("Role.", library()),
        None,
        0,
    )
    assert tool.system_prompt == render_index("Role.", library())
    assert tool.tool is not None and tool.tool.name == "load_skill" and tool.max_loads == 1
    assert path.system_prompt == render_paths("Role.", library())
    assert "(read `/skills/find-bridge/SKILL.md`)" in path.system_prompt
    assert path.tool is not None and path.tool.name == "read_file" and path.max_loads == 2


def test_an_empty_library_is_the_role_alone_in_every_mode() -> None:
    for mode in ("inline", "tool", "path"):
        shown = disclose(mode, "Role.", SkillLibrary.empty("a"))  # type: ignore[arg-type]
        assert (shown.system_prompt, shown.tool, shown.recorder) == ("Role.", None, None)
    with pytest.raises(ConfigError, match="unknown skill mode 'mcp'"):
        disclose("mcp", "Role.", library())  # type: ignore[arg-type]


def test_read_skill_file_serves_skill_md_and_resources_and_records_skill_reads() -> None:
    recorder = SkillUseRecorder()
    lib = library()

    skill_md = read_skill_file(lib, "/skills/find-bridge/SKILL.md", recorder)
    resource = read_skill_file(lib, "skills/find-bridge/references/example.md", recorder)
    missing = read_skill_file(lib, "/etc/passwd", recorder)

    assert skill_md == shipped_text(lib.get("find-bridge"))
    assert "grse-utility" not in skill_md and "Name the entity" in skill_md
    assert resource == "An example."
    assert missing.startswith("No file '/etc/passwd'. Skill files: /skills/find-bridge/SKILL.md")
    assert recorder.skills_used() == ["find-bridge"]
    assert [r.found for r in recorder.invocations] == [True, False]


def test_a_team_agent_in_path_mode_reads_its_skill_and_the_read_is_recorded() -> None:
    task = FakeTask([question("q1")])
    spec = TeamSpec(
        agents=(
            AgentSpec(name="retriever", role="R.", library=library(), skill_mode="path"),
            AgentSpec(name="reasoner", role="A.", library=SkillLibrary.empty("reasoner")),
        )
    )
    model = ScriptedChatModel(
        [
            tool_call_message("read_file", {"file_path": "/skills/find-bridge/SKILL.md"}),
            "Bridge: Aster Vey.",
            "Answer: Osterlin",
        ]
    )

    result = asyncio.run(
        run_rollout(
            spec,
            task,
            task.split("test")[0],
            FakeProvider(models={"actor": model}),
            sampling=SamplingSettings(),
            rollout_id="r",
        )
    )

    retriever = result.steps[0]
    assert retriever.skills_invoked == ["find-bridge"]
    assert retriever.tool_calls[0].name == "read_file"
    assert "Name the entity" in retriever.tool_calls[0].result
    assert retriever.system_prompt == render_paths("R.", library())
    assert result.answer == "Osterlin"
