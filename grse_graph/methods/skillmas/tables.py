"""Skill Utility (Q^s) and Executor Utility (Q^a) tables (spec skillmas.md §2).

Every entry holds a value q and a count n of the verified updates so far; one update with reward
R moves q by alpha = 1 / (1 + n) towards R (the count-based rate: q is the running mean of the
rewards the entry has seen, the initial value is overwritten by the first update). The tables
are values: every update returns a new table, so a round's state can be stored as it was.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

Q_INIT = 0.5
"""Value of an entry nobody has updated yet, and of an unknown skill or agent."""
GLOBAL_WEIGHT, TASK_WEIGHT, AGENT_WEIGHT = 0.5, 0.3, 0.2
"""Weights of Q^s's combined utility (global / task / executor entry)."""
TASK_TRUSTED_FROM = 3
"""Q^a uses its task entry from this many task updates on (then 0.6 task + 0.4 global)."""
TASK_SHARE = 0.6
OFF_TARGET_PENALTY = 0.5
"""Factor on an added specialist's Q^a for a task type outside its targets."""
EXTENSION_GLOBAL_BONUS, EXTENSION_TARGET_BONUS = 0.1, 0.2
MAX_UCB = 0.15
EXPLORATION = 1.0


class Entry(BaseModel):
    """One learned value and the number of verified updates behind it."""

    model_config = ConfigDict(frozen=True)

    q: float = Field(default=Q_INIT, ge=0.0, le=1.0)
    n: int = Field(default=0, ge=0)

    def updated(self, reward: float) -> Entry:
        """The entry after one update: alpha = 1 / (1 + n_prior)."""
        alpha = 1.0 / (1 + self.n)
        return Entry(q=min(1.0, max(0.0, self.q + alpha * (reward - self.q))), n=self.n + 1)


def _mean(values: Iterable[float], default: float) -> float:
    found = list(values)
    return sum(found) / len(found) if found else default


class SkillRecord(BaseModel):
    """Q^s of one skill lineage: the global entry, one per task type, one per agent."""

    model_config = ConfigDict(frozen=True)

    overall: Entry = Field(default_factory=Entry)
    tasks: dict[str, Entry] = Field(default_factory=dict)
    agents: dict[str, Entry] = Field(default_factory=dict)


class SkillUtilityTable(BaseModel):
    """Q^s keyed by skill lineage id (a copy made by restructuring shares its original's id).

    `total_updates` is the N of the UCB bonus (the code counts updates, not selections).
    """

    model_config = ConfigDict(frozen=True)

    skills: dict[str, SkillRecord] = Field(default_factory=dict)
    total_updates: int = 0

    def initial_q(self) -> float:
        """A new skill's global q: the mean global q of the updated skills (0.5 if none), so
        new skills neither outrank nor trail tested ones by construction."""
        return _mean((r.overall.q for r in self.skills.values() if r.overall.n > 0), Q_INIT)

    def initialize(self, skill_id: str) -> SkillUtilityTable:
        """The table with a record for `skill_id` (unchanged if it has one)."""
        if skill_id in self.skills:
            return self
        record = SkillRecord(overall=Entry(q=self.initial_q()))
        return self.model_copy(update={"skills": {**self.skills, skill_id: record}})

    def update(self, skill_id: str, task_type: str, agent: str, reward: float) -> SkillUtilityTable:
        """One verified update: the global entry first; a missing task or agent entry starts
        at the just-updated global q with n = 0 and is then updated."""
        record = self.initialize(skill_id).skills[skill_id]
        new_global = record.overall.updated(reward)
        task = record.tasks.get(task_type, Entry(q=new_global.q)).updated(reward)
        by_agent = record.agents.get(agent, Entry(q=new_global.q)).updated(reward)
        new = SkillRecord(
            overall=new_global,
            tasks={**record.tasks, task_type: task},
            agents={**record.agents, agent: by_agent},
        )
        return self.model_copy(
            update={
                "skills": {**self.skills, skill_id: new},
                "total_updates": self.total_updates + 1,
            }
        )

    def global_q(self, skill_id: str) -> float:
        record = self.skills.get(skill_id)
        return record.overall.q if record else Q_INIT

    def count(self, skill_id: str) -> int:
        record = self.skills.get(skill_id)
        return record.overall.n if record else 0

    def combined(self, skill_id: str, task_type: str, agent: str) -> float:
        """0.5 Q(s) + 0.3 Q(s, tau) + 0.2 Q(s, a); a missing entry falls back to Q(s)."""
        record = self.skills.get(skill_id)
        if record is None:
            return Q_INIT
        g = record.overall.q
        t = record.tasks[task_type].q if task_type in record.tasks else g
        a = record.agents[agent].q if agent in record.agents else g
        return GLOBAL_WEIGHT * g + TASK_WEIGHT * t + AGENT_WEIGHT * a

    def ucb(self, skill_id: str) -> float:
        """min(0.15, c sqrt(ln(N + 1) / max(1, n))): 0 while nothing was updated."""
        if self.total_updates == 0:
            return 0.0
        bonus = EXPLORATION * math.sqrt(
            math.log(self.total_updates + 1) / max(1, self.count(skill_id))
        )
        return min(MAX_UCB, bonus)

    def underperformers(self, threshold: float, min_trials: int) -> list[str]:
        """Skills with global n >= min_trials and global q < threshold, in insertion order."""
        return [
            s
            for s, r in self.skills.items()
            if r.overall.n >= min_trials and r.overall.q < threshold
        ]


class AgentRecord(BaseModel):
    """Q^a of one agent: the global entry and one per task type; specialists carry targets."""

    model_config = ConfigDict(frozen=True)

    overall: Entry = Field(default_factory=Entry)
    tasks: dict[str, Entry] = Field(default_factory=dict)
    is_extension: bool = False
    targets: list[str] = Field(default_factory=list)


class ExecutorUtilityTable(BaseModel):
    """Q^a keyed by agent name (a removed agent's record stays, as in the code)."""

    model_config = ConfigDict(frozen=True)

    agents: dict[str, AgentRecord] = Field(default_factory=dict)

    def initialize(self, agent: str) -> ExecutorUtilityTable:
        if agent in self.agents:
            return self
        return self.model_copy(update={"agents": {**self.agents, agent: AgentRecord()}})

    def update(self, agent: str, task_type: str, reward: float) -> ExecutorUtilityTable:
        """The global entry, then the task entry (a missing one starts at 0.5, n = 0)."""
        record = self.agents.get(agent, AgentRecord())
        task = record.tasks.get(task_type, Entry()).updated(reward)
        new = record.model_copy(
            update={
                "overall": record.overall.updated(reward),
                "tasks": {**record.tasks, task_type: task},
            }
        )
        return self.model_copy(update={"agents": {**self.agents, agent: new}})

    def baseline(self) -> float:
        """Mean global q over all agents (0.5 with none)."""
        return _mean((r.overall.q for r in self.agents.values()), Q_INIT)

    def task_baseline(self, task_type: str) -> float:
        """Mean task q over agents with n > 0 for the type, else `baseline()`."""
        values = [
            r.tasks[task_type].q
            for r in self.agents.values()
            if task_type in r.tasks and r.tasks[task_type].n > 0
        ]
        return _mean(values, self.baseline())

    def initialize_extension(
        self, agent: str, baseline: float, targets: list[str]
    ) -> ExecutorUtilityTable:
        """An added specialist: global min(1, b + 0.1), each target min(1, b + 0.2), n = 0."""
        record = AgentRecord(
            overall=Entry(q=min(1.0, baseline + EXTENSION_GLOBAL_BONUS)),
            tasks={t: Entry(q=min(1.0, baseline + EXTENSION_TARGET_BONUS)) for t in targets},
            is_extension=True,
            targets=list(targets),
        )
        return self.model_copy(update={"agents": {**self.agents, agent: record}})

    def value(self, agent: str, task_type: str) -> float:
        """getQ: 0.5 unknown; 0.6 Q(a, tau) + 0.4 Q(a) once the task entry has n >= 3, else
        Q(a); x0.5 for a specialist off its targets."""
        record = self.agents.get(agent)
        if record is None:
            return Q_INIT
        task = record.tasks.get(task_type)
        if task is not None and task.n >= TASK_TRUSTED_FROM:
            q = TASK_SHARE * task.q + (1 - TASK_SHARE) * record.overall.q
        else:
            q = record.overall.q
        if record.is_extension and record.targets and task_type not in record.targets:
            q *= OFF_TARGET_PENALTY
        return q
