"""The aggregation skeleton credit methods share: directions per credited skill, evidence per agent.

Every method that credits (agent, skill) pairs aggregates the same way: credits are bucketed by
(agent, skill) while the skill is still in the agent's library; a bucket of one credit becomes a
direction without a model call; a larger bucket is merged by ONE optimizer call, and when that
call's output is unusable a rule-based merge takes over with the reason recorded on the
direction (`merge_error`), not hidden. Each agent then gets its induction evidence. What a
credit looks like, how it maps to a verdict, the merge prompt, the fallback rule and what counts
as agent evidence are the method's: it supplies them as `AggregationHooks`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from grse_graph.errors import StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.llm.structured import astructured_call
from grse_graph.methods.plan import AgentEvidence, EditDirection
from grse_graph.skills import Skill, SkillLibrary

ItemT = TypeVar("ItemT")
ItemT_contra = TypeVar("ItemT_contra", contravariant=True)
MergedT = TypeVar("MergedT", bound=BaseModel)


class AggregationHooks(Protocol[ItemT_contra, MergedT]):
    """What a method decides inside the shared skeleton. `ItemT_contra` is one credit with the
    question it came from; `MergedT` is the schema the merge call answers with."""

    @property
    def merged_schema(self) -> type[MergedT]:
        """The structured answer of the merge call."""
        ...

    @property
    def merge_max_tokens(self) -> int:
        """The merge call's generation cap."""
        ...

    def single(self, item: ItemT_contra) -> EditDirection:
        """The direction of a skill with exactly one credit (no model call)."""
        ...

    def merge_messages(self, items: Sequence[ItemT_contra], skill: Skill) -> list[BaseMessage]:
        """The merge call's messages for two or more credits of `skill`."""
        ...

    def fallback(self, items: Sequence[ItemT_contra]) -> MergedT:
        """The rule-based merge used when the merge call's output is unusable."""
        ...

    def merged(
        self, items: Sequence[ItemT_contra], merged: MergedT, error: str | None
    ) -> EditDirection:
        """The direction of a merged bucket (`error`: why the fallback was used, or None)."""
        ...

    def agent_evidence(self, agent: str) -> AgentEvidence | None:
        """One agent's induction evidence, or None when it has none."""
        ...


@dataclass(frozen=True)
class SkeletonResult:
    """What the skeleton produces; the method adds its own fields to its `AggregationResult`."""

    directions: list[EditDirection]
    agent_evidence: list[AgentEvidence]
    optimizer_calls: int


def unique(items: Iterable[str]) -> list[str]:
    """`items` without repeats, in first-seen order."""
    return list(dict.fromkeys(items))


class SkillCreditLike(Protocol):
    """A credit of one agent's skill, whatever the method's credit schema."""

    @property
    def agent(self) -> str: ...

    @property
    def skill_id(self) -> str: ...


CreditT = TypeVar("CreditT", bound=SkillCreditLike)


def first_credit_per_skill(
    credits: Iterable[CreditT], library_names: Mapping[str, Iterable[str]]
) -> tuple[list[CreditT], int]:
    """The first credit per (agent, skill) whose skill is in that agent's library (in the
    critic's order), and how many were dropped. "First wins" keeps the result deterministic
    and independent of later, possibly contradicting, entries."""
    names = {agent: set(n) for agent, n in library_names.items()}
    seen: set[tuple[str, str]] = set()
    kept: list[CreditT] = []
    dropped = 0
    for credit in credits:
        key = (credit.agent, credit.skill_id)
        if key in seen or credit.skill_id not in names.get(credit.agent, set()):
            dropped += 1
            continue
        seen.add(key)
        kept.append(credit)
    return kept, dropped


def bucket_by_skill(
    items: Iterable[ItemT],
    key: Callable[[ItemT], tuple[str, str]],
    libraries: Mapping[str, SkillLibrary],
) -> dict[tuple[str, str], list[ItemT]]:
    """Items per (agent, skill) in input order; a skill no longer in its agent's library (or
    an agent without one) is skipped, since no operator could act on its direction."""
    buckets: dict[tuple[str, str], list[ItemT]] = {}
    for item in items:
        agent, skill_id = key(item)
        library = libraries.get(agent)
        if library is None or not library.has(skill_id):
            continue
        buckets.setdefault((agent, skill_id), []).append(item)
    return buckets


async def merge_by_one_call(
    items: Sequence[ItemT],
    skill: Skill,
    provider: ChatModelProvider,
    hooks: AggregationHooks[ItemT, MergedT],
) -> EditDirection:
    """Two or more credits of one skill merged by one optimizer call, or by the method's rule
    when the call's output is unusable (the reason goes on the direction)."""
    model = provider.chat("optimizer", max_tokens=hooks.merge_max_tokens)
    error: str | None = None
    try:
        merged = await astructured_call(
            model, hooks.merged_schema, hooks.merge_messages(items, skill)
        )
    except StructuredOutputError as exc:
        # The iteration goes on with the credits' own words; `merge_error` says why.
        error = str(exc)
        merged = hooks.fallback(items)
    return hooks.merged(items, merged, error)


async def aggregate_skeleton(
    buckets: Mapping[tuple[str, str], Sequence[ItemT]],
    libraries: Mapping[str, SkillLibrary],
    provider: ChatModelProvider,
    hooks: AggregationHooks[ItemT, MergedT],
) -> SkeletonResult:
    """Directions for every bucket (in bucket order) and evidence for every agent (in library
    order). Merge calls run one after another, in bucket order, so a run's optimizer calls
    (and a scripted optimizer's answers in tests) follow the plan."""
    directions: list[EditDirection] = []
    calls = 0
    for (agent, skill_id), items in buckets.items():
        if len(items) == 1:
            directions.append(hooks.single(items[0]))
            continue
        calls += 1
        skill = libraries[agent].get(skill_id)
        directions.append(await merge_by_one_call(items, skill, provider, hooks))
    evidence = [e for agent in libraries if (e := hooks.agent_evidence(agent)) is not None]
    return SkeletonResult(directions=directions, agent_evidence=evidence, optimizer_calls=calls)
