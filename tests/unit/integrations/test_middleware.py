"""SkillLibraryMiddleware on `create_agent` agents with fake models: the three disclosure modes,
what it records, and the skill-load budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from grse_graph.errors import ConfigError
from grse_graph.integrations import SKILLS_USED_KEY, SkillLibraryMiddleware
from grse_graph.skills import Skill, SkillLibrary, render_index, render_inline
from grse_graph.team.disclosure import render_paths
from tests.fakes import ScriptedChatModel, tool_call_message

ROLE = "You are the reasoner."


class OfferRecordingModel(ScriptedChatModel):
    """Records the tool names of every `bind_tools` call."""

    offered: list[list[str]] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> OfferRecordingModel:  # type: ignore[override]
        self.offered.append([getattr(t, "name", "") for t in tools])
        return self


def library() -> SkillLibrary:
    skills = [
        Skill.build(
            name="short-answer", description="Answer briefly.", body="Give one span."
        ).with_utility(0.25),
        Skill.build(name="check-dates", description="Check dates.", body="Resolve dates."),
    ]
    return SkillLibrary.build("reasoner", skills)


def run_agent(middleware: SkillLibraryMiddleware, model: ScriptedChatModel) -> dict[str, Any]:
    agent = create_agent(model, tools=[], system_prompt=ROLE, middleware=[middleware])
    return agent.invoke({"messages": [HumanMessage(content="When did Mia move?")]})


def system_of(messages: Sequence[Any]) -> str:
    return next(m.text for m in messages if isinstance(m, SystemMessage))


def test_inline_mode_puts_every_body_under_the_agents_own_prompt() -> None:
    model = ScriptedChatModel(["Answer: 2020"])
    middleware = SkillLibraryMiddleware(library())

    result = run_agent(middleware, model)

    assert system_of(model.calls[0]) == render_inline(ROLE, library())
    assert middleware.tools == []
    assert result[SKILLS_USED_KEY] == []
    assert middleware.recorder.invocations == ()


def test_tool_mode_serves_bodies_through_load_skill_and_records_the_load() -> None:
    model = ScriptedChatModel(
        [tool_call_message("load_skill", {"name": "check-dates"}), "Answer: 2020"]
    )
    middleware = SkillLibraryMiddleware(library(), mode="tool")

    result = run_agent(middleware, model)

    assert system_of(model.calls[0]) == render_index(ROLE, library())
    tool_message = next(m for m in model.calls[1] if isinstance(m, ToolMessage))
    assert tool_message.text == "# Skill: check-dates\n\nResolve dates."
    assert result[SKILLS_USED_KEY] == ["check-dates"]
    assert middleware.recorder.skills_used("reasoner") == ["check-dates"]


def test_path_mode_reads_skill_files_as_shipped_without_bookkeeping() -> None:
    model = ScriptedChatModel(
        [
            tool_call_message("read_file", {"file_path": "/skills/short-answer/SKILL.md"}, "a"),
            tool_call_message("read_file", {"file_path": "/skills/nope/SKILL.md"}, "b"),
            "Answer: 2020",
        ]
    )
    middleware = SkillLibraryMiddleware(library(), mode="path")

    result = run_agent(middleware, model)

    assert system_of(model.calls[0]) == render_paths(ROLE, library())
    assert "/skills/short-answer/SKILL.md" in system_of(model.calls[0])
    shipped, missing = [m.text for m in model.calls[2] if isinstance(m, ToolMessage)]
    assert shipped.startswith("---\nname: short-answer\n")
    assert "Give one span." in shipped
    assert "grse-" not in shipped
    assert missing.startswith("No file '/skills/nope/SKILL.md'")
    assert result[SKILLS_USED_KEY] == ["short-answer"]
    assert middleware.recorder.skills_used() == ["short-answer"]


def test_skill_tool_is_withdrawn_once_every_skill_was_loaded() -> None:
    model = OfferRecordingModel(
        [
            tool_call_message("load_skill", {"name": "short-answer"}, "a"),
            tool_call_message("load_skill", {"name": "check-dates"}, "b"),
            "Answer: 2020",
        ]
    )

    run_agent(SkillLibraryMiddleware(library(), mode="tool"), model)

    # The third model call gets no tools at all (create_agent then binds nothing).
    assert model.offered == [["load_skill"], ["load_skill"]]
    assert len(model.calls) == 3


def test_empty_library_offers_no_skill_tool_and_leaves_the_prompt_alone() -> None:
    model = OfferRecordingModel(["Answer: 2020"])

    run_agent(SkillLibraryMiddleware(SkillLibrary.empty("reasoner"), mode="tool"), model)

    assert system_of(model.calls[0]) == ROLE
    assert model.offered in ([], [[]])


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown skill mode 'mcp'"):
        SkillLibraryMiddleware(library(), mode="mcp")  # type: ignore[arg-type]
