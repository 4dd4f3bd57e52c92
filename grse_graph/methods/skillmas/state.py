"""SkillMAS's method state across rounds (spec §1.1, §9.2 row 28), one `SkillmasState` per
round in RUN/method_state.jsonl: both utility tables (with their update counters), the
retainer's failure counts, every skill's pool status, the team, the previous success rate and
the round's record. A resumed run reads the latest one back, so nothing is recomputed."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .diagnosis import Diagnosis
from .pool import PoolDecision, PoolTally, Status
from .restructure import Decision
from .skills import ParkedSkill
from .tables import ExecutorUtilityTable, SkillUtilityTable
from .team import TeamMember
from .work import EvolutionAction


class RetainedLine(BaseModel):
    """One retained trace as the round record keeps it."""

    rollout_id: str
    task_type: str
    success: bool
    reasons: list[str]
    priority: float


class RoundRecord(BaseModel):
    """What one round did: outcome, retained evidence, diagnoses, skill actions, pool
    decisions, drop flag and the restructuring decision."""

    iteration: int
    measurement: bool = False
    episodes: int
    success_rate: float
    success_by_type: dict[str, float] = Field(default_factory=dict)
    validation_score: float | None = Field(
        default=None, description="mean validation reward of X_r (checkpoint=validation only)"
    )
    judge_calls: int = 0
    retained: list[RetainedLine] = Field(default_factory=list)
    diagnoses: list[Diagnosis] = Field(default_factory=list)
    actions: list[EvolutionAction] = Field(default_factory=list)
    pool: list[PoolDecision] = Field(default_factory=list)
    drop: float | None = None
    reverted: Decision | None = Field(
        default=None, description="the previous round's edit undone by drop_policy=demote"
    )
    restructuring: Decision | None = None


class RoundUndo(BaseModel):
    """What undoing one round's promotions and restructuring edit takes (drop_policy=demote):
    the skills it promoted, the parents those promotions disabled, the team before its edit and,
    for a merge, the removed agent's library."""

    round: int
    promoted: list[str] = Field(default_factory=list, description="agent/name")
    parked_parents: list[ParkedSkill] = Field(default_factory=list)
    edit: Decision | None = None
    members_before: list[TeamMember] = Field(default_factory=list)
    removed_library: list[ParkedSkill] = Field(default_factory=list)


class SkillmasState(BaseModel):
    """X_r without the libraries (those are the run folder's libraries/iter_r)."""

    iteration: int = 0
    skills: SkillUtilityTable = Field(default_factory=SkillUtilityTable)
    executors: ExecutorUtilityTable = Field(default_factory=ExecutorUtilityTable)
    failure_counts: dict[str, int] = Field(default_factory=dict)
    status: dict[str, dict[str, Status]] = Field(default_factory=dict)
    members: list[TeamMember] = Field(default_factory=list)
    parents: dict[str, str] = Field(default_factory=dict)
    subset: list[str] = Field(default_factory=list, description="the fixed train subset")
    previous_success_rate: float | None = None
    failure_mass: dict[str, int] = Field(default_factory=dict)
    repaired_types: list[str] = Field(default_factory=list)
    pool_tallies: dict[str, PoolTally] = Field(
        default_factory=dict, description="agent/name -> a waiting shadow skill's tally"
    )
    undo: RoundUndo | None = Field(
        default=None, description="how to revert the last round (drop_policy=demote only)"
    )
    round: RoundRecord | None = None

    def status_of(self, agent: str, skill: str) -> Status:
        return self.status.get(agent, {}).get(skill, "active")
