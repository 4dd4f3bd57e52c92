"""Attribution checks of GUIDE §3, one small function per rule.

Each rule takes a diagnosis and the `CheckContext` of its group and returns violations as short
sentences (empty list = the rule holds). The sentences go back to the critic in the repair round,
so they say what is wrong in terms the critic can fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.methods.grse.critic_schema import NO_EDIT_ONLY, StepRef
from grse_graph.methods.plan import FailureDiagnosis, SkillCredit
from grse_graph.team.rollout import Rollout

# Rewards are floats from scorers; "reward = 1" tolerates rounding noise only.
_FULL_REWARD_TOL = 1e-9


class StepFacts(BaseModel):
    """What the checks need to know about one labelled step."""

    model_config = ConfigDict(frozen=True)

    agent: str
    skills_recorded: frozenset[str] = frozenset()
    tool_errors: int = 0


class CheckContext(BaseModel):
    """The facts of one group that the attribution rules are checked against.

    `rewards[i]` is the reward of rollout ``r{i+1}``; `steps[(i, j)]` the facts of step
    ``r{i}.s{j}`` (1-based, as labelled in the payload); `library` the skill names per agent;
    `credited` the (agent, skill) pairs that have a credit.
    """

    model_config = ConfigDict(frozen=True)

    rewards: tuple[float, ...]
    steps: dict[tuple[int, int], StepFacts]
    library: dict[str, frozenset[str]]
    credited: frozenset[tuple[str, str]] = Field(default_factory=frozenset)

    @classmethod
    def build(
        cls,
        rollouts: Sequence[Rollout],
        library_names: Mapping[str, Iterable[str]],
        credits: Iterable[SkillCredit] = (),
    ) -> CheckContext:
        """Facts from the group's rollouts (in payload order), libraries and credits."""
        steps: dict[tuple[int, int], StepFacts] = {}
        for i, rollout in enumerate(rollouts, start=1):
            for j, step in enumerate(rollout.steps, start=1):
                steps[(i, j)] = StepFacts(
                    agent=step.agent,
                    skills_recorded=frozenset(step.skills_present) | frozenset(step.skills_invoked),
                    tool_errors=sum(call.error is not None for call in step.tool_calls),
                )
        return cls(
            rewards=tuple(r.reward for r in rollouts),
            steps=steps,
            library={agent: frozenset(names) for agent, names in library_names.items()},
            credited=frozenset((c.agent, c.skill_id) for c in credits),
        )

    def with_credits(self, credits: Iterable[SkillCredit]) -> CheckContext:
        """The same facts with more credited pairs (credits added in the repair round)."""
        extra = frozenset((c.agent, c.skill_id) for c in credits)
        return self.model_copy(update={"credited": self.credited | extra})

    def is_success(self, rollout: int) -> bool:
        """Whether rollout ``r{rollout}`` reached reward 1."""
        return is_full_reward(self.rewards[rollout - 1])


def is_full_reward(reward: float) -> bool:
    """Whether a scorer's `reward` is 1 (up to rounding noise): a successful rollout."""
    return reward >= 1.0 - _FULL_REWARD_TOL


def _parsed(refs: Sequence[str]) -> list[tuple[str, StepRef | None]]:
    return [(ref, StepRef.parse(ref)) for ref in refs]


def _existing(refs: Sequence[str], ctx: CheckContext) -> list[StepRef]:
    out: list[StepRef] = []
    for _, ref in _parsed(refs):
        if ref is not None and (ref.rollout, ref.step) in ctx.steps:
            out.append(ref)
    return out


def check_refs_exist(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """Every cited step (failed and successful) is a well-formed ``r#.s#`` that exists."""
    out: list[str] = []
    for field, refs in (("failed_refs", d.failed_refs), ("successful_refs", d.successful_refs)):
        for text, ref in _parsed(refs):
            if ref is None:
                out.append(f"{field}: '{text}' is not a step reference like r1.s2")
            elif (ref.rollout, ref.step) not in ctx.steps:
                out.append(f"{field}: step {ref.label} does not exist")
    return out


def check_refs_agent(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """Every cited step belongs to the agent the diagnosis names."""
    out: list[str] = []
    for ref in _existing([*d.failed_refs, *d.successful_refs], ctx):
        owner = ctx.steps[(ref.rollout, ref.step)].agent
        if owner != d.agent:
            out.append(f"step {ref.label} belongs to agent '{owner}', not '{d.agent}'")
    return out


def check_failed_refs(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """failed_refs is non-empty and cites only rollouts with reward < 1."""
    if not d.failed_refs:
        return ["failed_refs is empty: cite at least one step of a rollout with reward < 1"]
    out: list[str] = []
    for ref in _existing(d.failed_refs, ctx):
        if ctx.is_success(ref.rollout):
            out.append(f"failed_refs: {ref.label} is in rollout r{ref.rollout} with reward 1")
    return out


def check_successful_refs(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """successful_refs cites only rollouts with reward = 1."""
    out: list[str] = []
    for ref in _existing(d.successful_refs, ctx):
        if not ctx.is_success(ref.rollout):
            out.append(
                f"successful_refs: {ref.label} is in rollout r{ref.rollout} with reward "
                f"{ctx.rewards[ref.rollout - 1]:.2f} < 1"
            )
    return out


def check_refine_skill_owned(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """refine names a skill that is in the named agent's library."""
    if d.action != "refine":
        return []
    if d.skill_id is None:
        return ["action refine needs a skill_id"]
    if d.skill_id not in ctx.library.get(d.agent, frozenset()):
        return [f"action refine: skill '{d.skill_id}' is not in agent '{d.agent}' library"]
    return []


def check_refine_skill_recorded(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """refine's skill was present or invoked in the agent's steps of a cited failed rollout."""
    if d.action != "refine" or d.skill_id is None:
        return []
    failed_rollouts = {
        ref.rollout for ref in _existing(d.failed_refs, ctx) if not ctx.is_success(ref.rollout)
    }
    for (i, _), facts in ctx.steps.items():
        if i in failed_rollouts and facts.agent == d.agent and d.skill_id in facts.skills_recorded:
            return []
    return [
        f"action refine: skill '{d.skill_id}' was not present or used by '{d.agent}' "
        "in any cited failed rollout"
    ]


def check_refine_has_credit(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """refine has a matching skill credit for the same (agent, skill)."""
    if d.action != "refine" or d.skill_id is None:
        return []
    if (d.agent, d.skill_id) not in ctx.credited:
        return [f"action refine: no credit for ('{d.agent}', '{d.skill_id}'); add one"]
    return []


def check_no_edit_only(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """tool_failure and uncertain_attribution allow only action no_edit."""
    if d.failure_type in NO_EDIT_ONLY and d.action != "no_edit":
        return [f"failure_type {d.failure_type} allows only action no_edit"]
    return []


def check_tool_failure_has_tool_error(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """tool_failure cites a failed step in which a tool call of the named agent returned an
    error. A tool that answered (even "no turn matches" to a query that was a whole sentence)
    did not fail: the query was the agent's. Filing such a run, or a wrong hand-off, under
    tool_failure would also block every edit, since tool_failure allows only no_edit."""
    if d.failure_type != "tool_failure":
        return []
    for ref in _existing(d.failed_refs, ctx):
        facts = ctx.steps[(ref.rollout, ref.step)]
        if facts.agent == d.agent and facts.tool_errors > 0:
            return []
    return [
        f"failure_type tool_failure: no tool call of '{d.agent}' in the cited failed steps "
        "returned an error; choose the failure type that describes what went wrong"
    ]


def check_induce_without_skill(d: FailureDiagnosis, ctx: CheckContext) -> list[str]:
    """induce has skill_id null: the new skill does not exist yet."""
    if d.action == "induce" and d.skill_id is not None:
        return ["action induce needs skill_id null"]
    return []


Rule = Callable[[FailureDiagnosis, CheckContext], list[str]]

RULES: tuple[Rule, ...] = (
    check_refs_exist,
    check_refs_agent,
    check_failed_refs,
    check_successful_refs,
    check_refine_skill_owned,
    check_refine_skill_recorded,
    check_refine_has_credit,
    check_no_edit_only,
    check_tool_failure_has_tool_error,
    check_induce_without_skill,
)


PROJECT_RULES: frozenset[Rule] = frozenset({check_tool_failure_has_tool_error})
"""The rules the project adds to the paper's checks (`tool_error_rule`: a tool_failure needs a
tool error in a cited failed step); the paper mode runs without them."""


def check_diagnosis(
    d: FailureDiagnosis, ctx: CheckContext, *, tool_error_rule: bool = True
) -> list[str]:
    """All violations of the attribution rules, in rule order (without the project's
    tool-error rule when `tool_error_rule` is off)."""
    out: list[str] = []
    for rule in RULES:
        if tool_error_rule or rule not in PROJECT_RULES:
            out.extend(rule(d, ctx))
    return out


def is_hypothesis(d: FailureDiagnosis) -> bool:
    """A correction with no successful comparison (no successful_refs) is only a hypothesis."""
    return bool(d.correction.strip()) and not d.successful_refs
