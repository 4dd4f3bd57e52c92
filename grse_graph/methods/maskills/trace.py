"""The skill trace xi of one trajectory: which skills each step is attributed to (spec §2.1).

MASkills' rule, kept as released because the GRSE comparison rests on it: a step is
attributed to the skills it *names* (whole-token, case-insensitive; hyphens are word
characters) or explicitly loads through the skill tool; a step that names none is attributed
to EVERY skill present in that agent's library. In practice xi is exposure: a skill that was
present but never invoked is credited all the same.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.team.rollout import Rollout, Step


class TraceEntry(BaseModel):
    """One step of an agent and the skills attributed to it.

    `named` is True when the step named or loaded a skill (the attribution narrowed to those);
    False when it fell back to every present skill.
    """

    model_config = ConfigDict(frozen=True)

    step: int = Field(ge=0, description="0-based position of the step in the rollout")
    skills: list[str]
    named: bool


class SkillTrace(BaseModel):
    """xi: per agent (in the order agents first act), one entry per step of that agent."""

    model_config = ConfigDict(frozen=True)

    agents: dict[str, list[TraceEntry]] = Field(default_factory=dict)

    def skills_of(self, agent: str) -> list[str]:
        """The distinct skills attributed to an agent, in order of first attribution."""
        seen: dict[str, None] = {}
        for entry in self.agents.get(agent, []):
            for name in entry.skills:
                seen.setdefault(name, None)
        return list(seen)

    def steps_of(self, agent: str, skill: str) -> list[int]:
        """0-based steps of an agent attributed to a skill."""
        return [e.step for e in self.agents.get(agent, []) if skill in e.skills]

    def invocations(self, agent: str, skill: str) -> int:
        """Entries of an agent attributed to a skill (the reference counts per step)."""
        return len(self.steps_of(agent, skill))

    def pairs(self) -> list[tuple[str, str]]:
        """Every (agent, skill) pair in xi, agents in trace order, skills in attribution order."""
        return [(agent, name) for agent in self.agents for name in self.skills_of(agent)]


def _mentions(text: str, name: str) -> bool:
    pattern = rf"(?<![\w-]){re.escape(name)}(?![\w-])"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def named_skills(step: Step) -> list[str]:
    """Skills of the step's library that it names in its output or loaded with the skill tool."""
    loaded = set(step.skills_invoked)
    return [name for name in step.skills_present if name in loaded or _mentions(step.output, name)]


def trace_entry(step: Step, position: int) -> TraceEntry:
    """The attribution of one step: the named skills, else every present skill."""
    named = named_skills(step)
    if named:
        return TraceEntry(step=position, skills=named, named=True)
    return TraceEntry(step=position, skills=list(step.skills_present), named=False)


def build_skill_trace(rollout: Rollout) -> SkillTrace:
    """xi of a rollout. Steps of an agent with an empty library give no entry (nothing to
    attribute), so an agent without skills does not appear."""
    agents: dict[str, list[TraceEntry]] = {}
    for position, step in enumerate(rollout.steps):
        if not step.skills_present:
            continue
        agents.setdefault(step.agent, []).append(trace_entry(step, position))
    return SkillTrace(agents=agents)
