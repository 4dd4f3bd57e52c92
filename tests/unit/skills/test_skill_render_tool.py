"""Giving a library to an agent: inline rendering, index rendering, the load_skill tool."""

from __future__ import annotations

import asyncio
import threading

from langchain_core.messages import ToolMessage

from grse_graph.skills import (
    SKILL_TOOL_NAME,
    Skill,
    SkillInvocation,
    SkillLibrary,
    SkillUseRecorder,
    make_skill_tool,
    render_index,
    render_inline,
)

LIBRARY = SkillLibrary(
    agent="reasoner",
    skills=[
        Skill(name="short-answer", description="Shortest span.\nAlways.", body="Give the span."),
        Skill(name="bridge", description="Two hops.", body="Find the bridge.\n\nThen hop."),
    ],
)


def test_inline_has_role_heading_and_bodies_in_order() -> None:
    assert render_inline("You are Agent 2.\n", LIBRARY) == (
        "You are Agent 2.\n\n## Skills\n\n"
        "### bridge\nFind the bridge.\n\nThen hop.\n\n"
        "### short-answer\nGive the span."
    )


def test_empty_library_renders_the_role_alone() -> None:
    empty = SkillLibrary.empty("reasoner")
    assert render_inline("Role.", empty) == "Role."
    assert render_index("Role.", empty) == "Role."


def test_index_lists_names_and_descriptions_and_names_the_tool() -> None:
    text = render_index("Role.", LIBRARY)
    assert text.startswith("Role.\n\n## Skills\n\n")
    assert f"`{SKILL_TOOL_NAME}`" in text
    assert text.endswith("- bridge: Two hops.\n- short-answer: Shortest span. Always.")
    assert "Give the span." not in text


def test_tool_returns_bodies_and_records_every_call() -> None:
    recorder = SkillUseRecorder()
    tool = make_skill_tool(LIBRARY, recorder)
    assert tool.name == "load_skill"
    assert tool.invoke({"name": "bridge"}) == "# Skill: bridge\n\nFind the bridge.\n\nThen hop."
    unknown = tool.invoke({"name": "nope"})
    assert unknown == "Unknown skill 'nope'. Available skills: bridge, short-answer."
    asyncio.run(tool.ainvoke({"name": "short-answer"}))
    assert recorder.invocations == (
        SkillInvocation(agent="reasoner", skill="bridge", found=True),
        SkillInvocation(agent="reasoner", skill="nope", found=False),
        SkillInvocation(agent="reasoner", skill="short-answer", found=True),
    )
    assert recorder.skills_used() == ["bridge", "short-answer"]
    assert recorder.skills_used("retriever") == []


def test_tool_answers_a_model_tool_call_with_a_tool_message() -> None:
    recorder = SkillUseRecorder()
    tool = make_skill_tool(LIBRARY, recorder)
    call = {"name": SKILL_TOOL_NAME, "args": {"name": "bridge"}, "id": "c1", "type": "tool_call"}
    message = tool.invoke(call)
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "c1" and "Find the bridge." in str(message.content)
    assert len(recorder.invocations) == 1
    assert tool.tool_call_schema.model_json_schema()["required"] == ["name"]


def test_recorder_is_safe_under_parallel_calls() -> None:
    recorder = SkillUseRecorder()
    tool = make_skill_tool(LIBRARY, recorder)
    threads = [
        threading.Thread(target=lambda: [tool.invoke({"name": "bridge"}) for _ in range(50)])
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    bridge = SkillInvocation(agent="reasoner", skill="bridge", found=True)
    assert recorder.invocations == (bridge,) * 200
