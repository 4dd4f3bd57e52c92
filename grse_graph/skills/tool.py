"""A LangChain tool that hands an agent a skill body on request and records each request."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field

from .library import SkillLibrary
from .render import SKILL_TOOL_NAME


class SkillInvocation(BaseModel):
    """One request for a skill body: which agent asked, for which name, whether it existed."""

    model_config = ConfigDict(frozen=True)

    agent: str
    skill: str
    found: bool


class SkillUseRecorder:
    """Collects skill invocations in call order. Thread-safe: tool nodes may run tools in
    parallel. Create one per rollout (or per step) and read it when the rollout ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[SkillInvocation] = []

    def record(self, agent: str, skill: str, *, found: bool = True) -> None:
        """Append one invocation."""
        with self._lock:
            self._records.append(SkillInvocation(agent=agent, skill=skill, found=found))

    @property
    def invocations(self) -> tuple[SkillInvocation, ...]:
        """Every invocation so far, in call order."""
        with self._lock:
            return tuple(self._records)

    def skills_used(self, agent: str | None = None) -> list[str]:
        """Distinct existing skills that were loaded (optionally by one agent), first use first."""
        names = [
            r.skill for r in self.invocations if r.found and (agent is None or r.agent == agent)
        ]
        return list(dict.fromkeys(names))


class LoadSkillArgs(BaseModel):
    """Arguments of the `load_skill` tool."""

    name: str = Field(description="The exact name of the skill to load, as listed in the index.")


def library_tool(
    read: Callable[..., str], name: str, description: str, args_schema: type[BaseModel]
) -> BaseTool:
    """A tool that reads a skill library in memory: `read` answers both the sync and the async
    call (in the caller's task, not a worker thread: there is no I/O to wait for)."""

    async def aread(**arguments: Any) -> str:
        return read(**arguments)

    return StructuredTool.from_function(
        func=read, coroutine=aread, name=name, description=description, args_schema=args_schema
    )


def make_skill_tool(library: SkillLibrary, recorder: SkillUseRecorder) -> BaseTool:
    """The `load_skill` tool for one agent's library.

    It returns the requested skill's body (with its name as a heading); an unknown name gets a
    message listing the available names. Every call is recorded on `recorder` with the
    library's agent, including calls for unknown names (recorded with `found=False`).
    """
    available = ", ".join(library.names()) or "(none)"

    def load_skill(name: str) -> str:
        requested = name.strip()
        if library.has(requested):
            recorder.record(library.agent, requested, found=True)
            skill = library.get(requested)
            return f"# Skill: {skill.name}\n\n{skill.body}"
        recorder.record(library.agent, requested, found=False)
        return f"Unknown skill {requested!r}. Available skills: {available}."

    description = (
        f"Load the full instructions of one of your skills by name. Available skills: {available}."
    )
    return library_tool(load_skill, SKILL_TOOL_NAME, description, LoadSkillArgs)
