"""Typed values of MASkills' credit stage (spec maskills.md §2.3, §3).

The critic fills `TrajectoryCritique` through function calling: one credit per (agent, skill)
of the trajectory's skill trace and one residual per agent. Fields are flat and ordered so the
evidence comes before the verdict and the number (grammar-constrained engines emit fields in
schema order, so the model states its reasons first). `critique_schema` narrows the advertised
JSON schema to the trajectory's own agents and skills; parsing stays as lenient as the plain
models, so a wrong name from a server that ignores the schema is a counted drop, not a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from grse_graph.llm.config import SchemaNarrowing
from grse_graph.methods.maskills.trace import SkillTrace
from grse_graph.methods.plan import DirectionVerdict, Verdict
from grse_graph.methods.schema_narrowing import enum_schema, narrowed


class MaskillsCredit(BaseModel):
    """The critic's credit for one (agent, skill) pair of one trajectory (spec §2.3)."""

    agent: str = Field(description="agent that owns the skill")
    skill_id: str = Field(description="skill name from that agent's invoked skills")
    evidence: str = Field(description="a concrete observation from the trajectory")
    verdict: Verdict = Field(
        description="helped, redundant (adds nothing another skill gives), harmful or neutral"
    )
    utility_delta: float = Field(
        ge=-1.0, le=1.0, description="effect on the score: -1 hurt .. 0 none .. 1 helped"
    )
    suggested_edit: str = Field(description="a concrete change to the skill, or empty")
    redundant_with: list[str] = Field(description="skills it overlaps with, or empty")
    conflicts_with: list[str] = Field(description="skills it contradicts, or empty")


class AgentResidual(BaseModel):
    """What one agent did that no single skill explains (spec §2.3, `ResidualCredit`)."""

    agent: str
    summary: str = Field(description="effects not explained by any one skill, or empty")
    needs_new_skill: bool = Field(description="true if a new skill would close a gap")
    missing_capability: str = Field(description="the capability no skill covers, or empty")


class TrajectoryCritique(BaseModel):
    """Everything the critic says about one trajectory."""

    credits: list[MaskillsCredit]
    residuals: list[AgentResidual]


class TrajectoryCredit(BaseModel):
    """The checked result of one critic call on one trajectory.

    `credits` holds the first credit per (agent, skill) whose skill is in that agent's
    library; `dropped_credits` counts the others (unknown skill or agent, repeated pair);
    `uncredited` lists the xi pairs "agent/skill" the critic left without a credit.
    """

    credits: list[MaskillsCredit] = Field(default_factory=list)
    residuals: list[AgentResidual] = Field(default_factory=list)
    dropped_credits: int = 0
    uncredited: list[str] = Field(default_factory=list)
    payload_chars: int = 0
    critic_calls: int = 1

    def residual_of(self, agent: str) -> AgentResidual | None:
        """The agent's residual, if the critic gave one."""
        return next((r for r in self.residuals if r.agent == agent), None)


class MergedGradient(BaseModel):
    """What the optimizer returns when several credits of one skill are merged (spec §3)."""

    summary: str = Field(description="one stable summary of what the credits show")
    verdict: DirectionVerdict = Field(
        description="keep (works), refine (change it), redundant, low_utility (remove)"
    )
    suggested_edit: str = Field(description="one concrete change, or empty if keep")
    redundant_with: list[str] = Field(description="skills it overlaps with, or empty")
    utility_score: float = Field(ge=-1.0, le=1.0, description="overall effect, -1 .. 1")


class HardCase(BaseModel):
    """A trajectory at or below the hard-case threshold, as induction evidence for one agent
    (spec §3: reward plus that agent's residual and missing capability)."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    reward: float
    residual: str = ""
    missing: str = ""

    def line(self) -> str:
        """The evidence line the induce prompt shows."""
        text = f"reward={self.reward:.2f}"
        if self.residual:
            text += f"; residual={self.residual}"
        if self.missing:
            text += f"; missing={self.missing}"
        return text


# --- the advertised schema --------------------------------------------------------------------


def _exactly(n: int) -> dict[str, Any]:
    return {"minItems": n, "maxItems": n}


def critique_schema(
    trace: SkillTrace, agents: Sequence[str], narrowing: SchemaNarrowing = "per_agent"
) -> type[TrajectoryCritique]:
    """The schema the critic fills for one trajectory.

    Each credit is one of per-agent variants whose `agent` and `skill_id` are enums of that
    agent's xi skills (``flat``: one variant whose enums list every xi agent and skill once;
    ``off``: the plain model, for engines that only see the schema in the prompt), and the list
    asks for exactly one credit per xi pair (exposure-based credit: every skill in xi is
    judged). Residuals: one per agent of the team. The schema keeps the name
    ``TrajectoryCritique`` because the function-calling tool is named after it.
    """
    if narrowing == "off":
        return TrajectoryCritique
    credited = [agent for agent in trace.agents if trace.skills_of(agent)]
    groups = [credited] if narrowing == "flat" and credited else [[a] for a in credited]
    variants: list[type[BaseModel]] = [
        narrowed(
            MaskillsCredit,
            f"MaskillsCredit_{group[0]}" if len(group) == 1 else "MaskillsCredit",
            {
                "agent": enum_schema(group),
                "skill_id": enum_schema(
                    list(dict.fromkeys(s for agent in group for s in trace.skills_of(agent)))
                ),
            },
        )
        for group in groups
    ]
    pairs = len(trace.pairs())
    if variants:
        item: Any = variants[0] if len(variants) == 1 else Union[tuple(variants)]  # noqa: UP007
        credits: tuple[Any, Any] = (list[item], Field(json_schema_extra=_exactly(pairs)))
    else:
        # Nothing in xi (empty libraries): only residuals, which drive induction.
        credits = (list[MaskillsCredit], Field(json_schema_extra=_exactly(0)))
    residual = narrowed(AgentResidual, "AgentResidual", {"agent": enum_schema(list(agents))})
    return create_model(
        "TrajectoryCritique",
        __base__=TrajectoryCritique,
        __doc__=TrajectoryCritique.__doc__,
        credits=credits,
        residuals=(list[residual], Field(json_schema_extra=_exactly(len(agents)))),  # type: ignore[valid-type]
    )
