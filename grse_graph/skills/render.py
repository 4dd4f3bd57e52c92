"""The two ways an agent receives its library: inline bodies, or an index plus a tool."""

from __future__ import annotations

from .library import SkillLibrary

SKILL_TOOL_NAME = "load_skill"


def render_inline(role: str, library: SkillLibrary) -> str:
    """The role text, then `## Skills` with each body under `### <name>` (paper format).

    An empty library gives the role text alone, with no heading.
    """
    role = role.rstrip()
    if not library.skills:
        return role
    sections = [f"### {skill.name}\n{skill.body}".rstrip() for skill in library.skills]
    return f"{role}\n\n## Skills\n\n" + "\n\n".join(sections)


def render_index(role: str, library: SkillLibrary) -> str:
    """The role text, then `## Skills` listing names and descriptions and telling the agent to
    call the `load_skill` tool for a full body. An empty library gives the role text alone."""
    role = role.rstrip()
    if not library.skills:
        return role
    index = "\n".join(
        f"- {skill.name}: {' '.join(skill.description.split())}" for skill in library.skills
    )
    return (
        f"{role}\n\n## Skills\n\n"
        f"You have the skills listed below. Before relying on one, call the `{SKILL_TOOL_NAME}` "
        "tool with its name to read its full instructions, then follow them.\n\n"
        f"{index}"
    )
