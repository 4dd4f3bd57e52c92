"""How an agent receives its skill library: the one place both the team's own agents and the
LangChain middleware (`grse_graph.integrations`) get their prompt text and skill tool from.

- `inline`: every body in the system prompt (the paper's format); nothing to record.
- `tool`: names and descriptions in the prompt, bodies through the `load_skill` tool.
- `path`: names, descriptions and `/skills/<name>/SKILL.md` paths in the prompt, files through a
  `read_file` tool: the disclosure a shipped pack gets in deepagents (`FilesystemBackend` rooted
  at `<pack>/<agent>` with `skills=["/skills/"]`), served here from the in-memory library.

Tool and path loads are recorded on a `SkillUseRecorder` (only existing skills count as used).
"""

from __future__ import annotations

from typing import get_args

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from grse_graph.errors import ConfigError
from grse_graph.skills import (
    BOOKKEEPING_KEYS,
    SKILL_FILE,
    SKILL_TOOL_NAME,
    Skill,
    SkillLibrary,
    SkillUseRecorder,
    make_skill_tool,
    render_index,
    render_inline,
)
from grse_graph.skills.tool import library_tool

from .kinds import SkillMode

PATH_TOOL_NAME = "read_file"
SKILLS_ROOT = "/skills"
# The tools that hand an agent its own skills (their results are skill text, not task evidence).
SKILL_TOOL_NAMES = frozenset({SKILL_TOOL_NAME, PATH_TOOL_NAME})


class SkillDisclosure(BaseModel):
    """A library as one agent sees it: the system prompt, the skill tool (if any), how many
    loads one turn may make, and the recorder of those loads."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    system_prompt: str
    tool: BaseTool | None = None
    recorder: SkillUseRecorder | None = None
    max_loads: int = Field(default=0, ge=0)


def skill_path(skill: Skill, file: str = SKILL_FILE) -> str:
    """The path under which `path` disclosure shows a skill's file."""
    return f"{SKILLS_ROOT}/{skill.name}/{file}"


def shipped_text(skill: Skill) -> str:
    """The SKILL.md an agent reads: as shipped, without the training bookkeeping."""
    kept = {k: v for k, v in skill.metadata.items() if k not in BOOKKEEPING_KEYS}
    return skill.model_copy(update={"metadata": kept}).to_markdown()


def render_paths(role: str, library: SkillLibrary) -> str:
    """The role text, then `## Skills` listing each skill's name, description and SKILL.md path,
    telling the agent to read the file before relying on a skill. Empty library: the role."""
    role = role.rstrip()
    if not library.skills:
        return role
    index = "\n".join(
        f"- {s.name}: {' '.join(s.description.split())} (read `{skill_path(s)}`)"
        for s in library.skills
    )
    return (
        f"{role}\n\n## Skills\n\n"
        f"You have the skills listed below. Before relying on one, call the `{PATH_TOOL_NAME}` "
        "tool with its path to read its full instructions, then follow them.\n\n"
        f"{index}"
    )


def read_skill_file(library: SkillLibrary, path: str, recorder: SkillUseRecorder) -> str:
    """What `read_file` returns for `path`: a skill's SKILL.md or one of its resource files.
    Reading a SKILL.md is recorded as a use of that skill; a bad path as a failed one."""
    parts = path.strip().lstrip("/").split("/", 2)
    if len(parts) == 3 and f"/{parts[0]}" == SKILLS_ROOT and library.has(parts[1]):
        skill = library.get(parts[1])
        if parts[2] == SKILL_FILE:
            recorder.record(library.agent, skill.name, found=True)
            return shipped_text(skill)
        if parts[2] in skill.resources:
            return skill.resources[parts[2]].decode("utf-8", errors="replace")
    recorder.record(library.agent, parts[1] if len(parts) > 1 else path, found=False)
    known = ", ".join(skill_path(s) for s in library.skills) or "(none)"
    return f"No file {path!r}. Skill files: {known}."


class ReadFileArgs(BaseModel):
    """Arguments of the `read_file` tool."""

    file_path: str = Field(description="Absolute path of the file, e.g. /skills/<name>/SKILL.md.")


def make_path_tool(library: SkillLibrary, recorder: SkillUseRecorder) -> BaseTool:
    """The `read_file` tool over one agent's library (see `read_skill_file`)."""

    def read_file(file_path: str) -> str:
        return read_skill_file(library, file_path, recorder)

    description = "Read a file of one of your skills by its path (listed in your instructions)."
    return library_tool(read_file, PATH_TOOL_NAME, description, ReadFileArgs)


def disclose(mode: SkillMode, role: str, library: SkillLibrary) -> SkillDisclosure:
    """The library under `role` in one disclosure mode. An empty library is the role alone and
    no tool in every mode."""
    if mode not in get_args(SkillMode):
        raise ConfigError(f"unknown skill mode {mode!r} (known: {', '.join(get_args(SkillMode))})")
    if mode == "inline" or not library.skills:
        return SkillDisclosure(system_prompt=render_inline(role, library))
    recorder = SkillUseRecorder()
    if mode == "tool":
        return SkillDisclosure(
            system_prompt=render_index(role, library),
            tool=make_skill_tool(library, recorder),
            recorder=recorder,
            max_loads=len(library.skills),
        )
    resources = sum(len(s.resources) for s in library.skills)
    return SkillDisclosure(
        system_prompt=render_paths(role, library),
        tool=make_path_tool(library, recorder),
        recorder=recorder,
        max_loads=len(library.skills) + resources,
    )
