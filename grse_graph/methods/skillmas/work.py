"""What skill evolution works on in one round: the workspace its operators, the pool, the drop
penalty and the restructuring step edit in turn, the evidence they read, the action record each
of them leaves, and the validation pool's tallies and decisions (kept in the method state)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grse_graph.skills import Skill, SkillLibrary

from .diagnosis import Diagnosis
from .retention import RetainedItem
from .skills import ParkedSkill, is_seed, lineage_id
from .tables import SkillUtilityTable
from .trace import VerifiedTrace

Status = Literal["active", "shadow", "disabled"]
ActionKind = Literal[
    "learn",
    "create",
    "repair",
    "tighten",
    "refine",
    "prune",
    "promote",
    "hold",
    "disable",
    "demote",
    "restore",
    "rejected",
    "noop",
]


class EvolutionAction(BaseModel):
    """One thing skill evolution did (or declined to do) this round."""

    kind: ActionKind
    agent: str = ""
    skill: str = ""
    task_type: str = ""
    detail: str = ""

    def rejected(self, detail: str) -> EvolutionAction:
        """This action declined, with the reason."""
        return self.model_copy(update={"kind": "rejected", "detail": detail})


class PoolTally(BaseModel):
    """A waiting shadow skill's verified uses and successes over all rounds so far, and how many
    of its evaluations failed (dropped when the skill leaves the pool)."""

    uses: int = 0
    successes: int = 0
    failed_evaluations: int = 0


class PoolDecision(BaseModel):
    """One shadow skill's evaluation in a round (uses/successes: the counts it was judged on)."""

    agent: str
    skill: str
    uses: int
    successes: int
    decision: Literal["promote", "hold", "disable"]
    reason: str
    failed_evaluations: int = 0


@dataclass
class EvolutionWork:
    """The libraries, statuses and tables skill evolution edits in one round, in place; what it
    ends with becomes the next `SkillmasState`."""

    libraries: dict[str, SkillLibrary]
    status: dict[str, dict[str, Status]]
    table: SkillUtilityTable
    parents: dict[str, str] = field(default_factory=dict)  # "agent/copy" -> "agent/parent"
    actions: list[EvolutionAction] = field(default_factory=list)
    new_skills: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)
    repaired_types: list[str] = field(default_factory=list)
    pool: list[PoolDecision] = field(default_factory=list)
    touched: set[tuple[str, str, str]] = field(default_factory=set)
    tallies: dict[str, PoolTally] = field(default_factory=dict)  # "agent/name" -> pool tally
    parked: list[ParkedSkill] = field(default_factory=list)  # parents disabled by a promotion
    demoted: set[str] = field(default_factory=set)  # back in the pool: not evaluated this round

    def has_room(self, agent: str, max_auto_skills: int) -> bool:
        """Whether `agent` may gain a skill: its library is under its limit L and the team
        under the cap on skills SkillMAS wrote."""
        library = self.libraries[agent]
        written = sum(not is_seed(s) for lib in self.libraries.values() for s in lib.skills)
        return (library.limit is None or len(library) < library.limit) and (
            written < max_auto_skills
        )

    def holds(self, ref: str) -> bool:
        """Whether the library of agent `ref`'s agent holds `ref`'s skill (`agent/name`)."""
        agent, _, name = ref.partition("/")
        return agent in self.libraries and self.libraries[agent].has(name)

    def has_name(self, name: str) -> bool:
        """Whether any library holds a skill called `name`."""
        return any(lib.has(name) for lib in self.libraries.values())

    def add_shadow(self, agent: str, skill: Skill) -> None:
        """Put a new skill into the pool: in the library as shadow, with a Q^s record."""
        self.libraries[agent] = self.libraries[agent].add(skill)
        self.status.setdefault(agent, {})[skill.name] = "shadow"
        self.table = self.table.initialize(lineage_id(skill, agent))
        self.new_skills.append(f"{agent}/{skill.name}")

    def disable(self, agent: str, name: str) -> Skill | None:
        """Take a skill out of its library (status disabled, pool tally dropped); returns it
        (None if absent)."""
        if not self.holds(f"{agent}/{name}"):
            return None
        skill = self.libraries[agent].get(name)
        self.libraries[agent] = self.libraries[agent].remove(name)
        self.status.setdefault(agent, {})[name] = "disabled"
        self.tallies.pop(f"{agent}/{name}", None)
        return skill


class RoundEvidence(BaseModel):
    """What evolution reads: every normalised trace and the retained evidence of the round,
    its checked diagnoses, and the team it ran with."""

    model_config = ConfigDict(frozen=True)

    round: int
    traces: list[VerifiedTrace]
    retained: list[RetainedItem]
    diagnoses: list[Diagnosis]
    agents: list[str]
    final_agent: str
    domain: str = "a question-answering agent team"

    def of_type(self, tau: str) -> list[VerifiedTrace]:
        """The round's traces of task type `tau`, in order."""
        return [t for t in self.traces if t.task_type == tau]
