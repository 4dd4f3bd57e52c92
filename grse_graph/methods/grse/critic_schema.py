"""Typed values of the GRSE critic and its checks (GUIDE §3).

The critic fills `CriticOutput` through function calling, so that model and its parts stay flat:
strings, enums, lists of strings and one bounded float. Every field the model fills is required
and ordered so that evidence comes before the verdict and the explanation before the action:
grammar-constrained engines emit fields in schema order, so the model states its reasons first.

Step references are short strings such as ``r2.s1`` (rollout 2, step 1, both 1-based, exactly as
the payload labels them); `StepRef.parse` accepts small variations (case, spaces, brackets) so a
small model can cite reliably. The values aggregation and the operators share (`SkillCredit`,
`FailureDiagnosis`, `DiagnosisCounts`, ...) live in `grse_graph.methods.plan`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import JsonDict

from grse_graph.methods.plan import (
    FAILURE_TYPES,
    AgentFeedback,
    DiagnosisCounts,
    FailureDiagnosis,
    OutputContrast,
    SkillCredit,
)
from grse_graph.methods.schema_narrowing import enum_schema, narrowed

DiagnosisStatus = Literal["accepted", "repaired", "dropped"]

NO_EDIT_ONLY: frozenset[str] = frozenset({"tool_failure", "uncertain_attribution"})

_REF_RE = re.compile(r"^\[?\s*r\s*(\d+)\s*[.\-_:/ ]?\s*s\s*(\d+)\s*\]?$", re.IGNORECASE)


class StepRef(BaseModel):
    """A cited step: rollout and step numbers as labelled in the critic payload (1-based)."""

    model_config = ConfigDict(frozen=True)

    rollout: int = Field(ge=1)
    step: int = Field(ge=1)

    @classmethod
    def parse(cls, text: str) -> StepRef | None:
        """Parse ``r2.s1`` (also ``R2.S1``, ``[r2.s1]``, ``r2 s1``, ``r2s1``); None if malformed."""
        m = _REF_RE.match(text.strip())
        if m is None:
            return None
        rollout, step = int(m.group(1)), int(m.group(2))
        if rollout < 1 or step < 1:
            return None
        return cls(rollout=rollout, step=step)

    @property
    def label(self) -> str:
        """The canonical form used in the payload, e.g. ``r2.s1``."""
        return f"r{self.rollout}.s{self.step}"


def step_label(rollout_pos: int, step_pos: int) -> str:
    """Label of the step at 0-based positions (rollout in the group, step in the rollout)."""
    return StepRef(rollout=rollout_pos + 1, step=step_pos + 1).label


class CriticOutput(BaseModel):
    """Everything the critic says about one question's group of rollouts."""

    credits: list[SkillCredit]
    agent_feedback: list[AgentFeedback]
    diagnoses: list[FailureDiagnosis]


class CriticCredits(BaseModel):
    """What the `w/o structure` critic returns: the group-relative credits and agent feedback
    of the base critic, without the diagnosis schema."""

    credits: list[SkillCredit]
    agent_feedback: list[AgentFeedback]


class AgentVocabulary(BaseModel):
    """What a critic may cite for one agent of a group: its skills and its steps."""

    model_config = ConfigDict(frozen=True)

    skills: tuple[str, ...] = ()
    failed_refs: tuple[str, ...] = ()
    successful_refs: tuple[str, ...] = ()
    # Whether a tool call in one of the agent's failed steps returned an error: only then can
    # a tool have failed.
    failed_tool_errors: bool = False


class CriticVocabulary(BaseModel):
    """The names a critic may use for one group, per agent (in team order).

    `critic_output_schema` writes them into the JSON schema: each diagnosis and credit is one
    of per-agent variants whose skill and step fields are enums of that agent's own skills and
    steps (with `flat`, one variant over all agents; see `variants`), so a grammar-constrained
    engine (llama.cpp, vLLM guided decoding) cannot name a skill, step or action the
    attribution checks would reject for being impossible. Parsing
    stays as lenient as the plain models: on a server that ignores the schema, a wrong name is
    still a single diagnosis for the checks (repaired or dropped), not a failed critic call.
    """

    model_config = ConfigDict(frozen=True)

    agents: dict[str, AgentVocabulary]
    flat: bool = False

    def variants(
        self, applies: Callable[[AgentVocabulary], bool]
    ) -> list[tuple[list[str], AgentVocabulary]]:
        """(agent names, what they may cite) per advertised variant, over the agents for which
        `applies` holds: one variant per agent, or with `flat` one for all of them whose enums
        list each skill and step once (their union, in team order).

        A flat schema is about a third shorter than one variant per agent, at the price that a
        name can be paired with another agent's: the attribution checks catch that, but on the
        demo the 0.5B critic repeated the pairing in its repair round (see
        `RoleSettings.schema_narrowing`).
        """
        chosen = [(agent, words) for agent, words in self.agents.items() if applies(words)]
        if not self.flat:
            return [([agent], words) for agent, words in chosen]
        if not chosen:
            return []
        union = AgentVocabulary(
            skills=_union(words.skills for _, words in chosen),
            failed_refs=_union(words.failed_refs for _, words in chosen),
            successful_refs=_union(words.successful_refs for _, words in chosen),
            failed_tool_errors=any(words.failed_tool_errors for _, words in chosen),
        )
        return [([agent for agent, _ in chosen], union)]


def _union(groups: Iterable[Sequence[str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for group in groups for name in group))


_SKILL_FAILURES: frozenset[str] = frozenset({"skill_not_followed", "skill_defect"})


def _list_of(values: Sequence[str], *, at_least: int = 0) -> dict[str, Any]:
    # An empty vocabulary admits only the empty list.
    if not values:
        return {"maxItems": 0}
    return {"items": enum_schema(values), **({"minItems": at_least} if at_least else {})}


def _one_of_models(models: Sequence[type[BaseModel]]) -> Any:
    return models[0] if len(models) == 1 else Union[tuple(models)]  # noqa: UP007


def critic_output_schema(
    group_has_failure: bool,
    vocabulary: CriticVocabulary | None = None,
    max_diagnoses: int | None = None,
) -> type[CriticOutput]:
    """The schema the critic fills for one group.

    A group with a rollout below reward 1 has a failure to explain, so its schema requires at
    least one diagnosis (``minItems`` becomes part of the engine's grammar): small critics
    otherwise close every list at once and the group teaches nothing. An honest outlet remains
    (``uncertain_attribution`` with ``no_edit``). With a `vocabulary`, agents, skills, steps
    and actions are advertised per agent (see `CriticVocabulary`), and the lists are bounded:
    one credit per (agent, skill), one feedback per agent and `max_diagnoses` diagnoses. A 0.5B
    critic otherwise writes one diagnosis per failure type for the same skill until its token
    cap cuts the reply. The bounds are advertised (``maxItems``, part of the engine's grammar),
    not enforced in parsing: a longer list from a server that ignores the schema is still
    checked item by item. Parsed values are converted back to the plain models by the caller;
    the schema keeps the name ``CriticOutput`` because the function-calling tool is named
    after it.
    """
    fields: dict[str, Any] = {
        "credits": _credits_field(vocabulary),
        "agent_feedback": (
            list[_feedback_item(vocabulary)],  # type: ignore[misc]
            _at_most(len(vocabulary.agents) if vocabulary else None),
        ),
        "diagnoses": (
            list[_diagnosis_item(vocabulary)],  # type: ignore[misc]
            _at_most(max_diagnoses, at_least=int(group_has_failure)),
        ),
    }
    return create_model(
        "CriticOutput", __base__=CriticOutput, __doc__=CriticOutput.__doc__, **fields
    )


def critic_credits_schema(skill_pairs: int, agents: int) -> type[CriticCredits]:
    """`CriticCredits` with the list bounds of `critic_output_schema`: at most one credit per
    (agent, skill) pair of the group (`skill_pairs`) and one feedback per agent (`agents`).
    Advertised (``maxItems``), not enforced in parsing; the schema keeps the name
    ``CriticCredits`` because the function-calling tool is named after it."""
    return create_model(
        "CriticCredits",
        __base__=CriticCredits,
        __doc__=CriticCredits.__doc__,
        credits=(list[SkillCredit], _at_most(skill_pairs)),
        agent_feedback=(list[AgentFeedback], _at_most(agents)),
    )


def critic_repair_schema(vocabulary: CriticVocabulary | None, diagnoses: int) -> type[CriticRepair]:
    """`CriticRepair` advertising the same names as the group's `critic_output_schema`, and
    one corrected diagnosis per one sent back (`diagnoses`)."""
    if vocabulary is None:
        return CriticRepair
    return create_model(
        "CriticRepair",
        __base__=CriticRepair,
        __doc__=CriticRepair.__doc__,
        diagnoses=(list[_diagnosis_item(vocabulary)], _at_most(diagnoses)),  # type: ignore[misc]
        credits=_credits_field(vocabulary),
    )


def _at_most(items: int | None, *, at_least: int = 0) -> Any:
    """A required list field advertising ``maxItems`` (when bounded) and ``minItems``."""
    extra: JsonDict | None = None if items is None else {"maxItems": items}
    return Field(min_length=at_least or None, json_schema_extra=extra)


def _credits_field(vocabulary: CriticVocabulary | None) -> tuple[Any, Any]:
    if vocabulary is None:
        return list[SkillCredit], ...
    variants = [
        narrowed(
            SkillCredit,
            f"SkillCredit_{agents[0]}" if len(agents) == 1 else "SkillCredit",
            {"agent": enum_schema(agents), "skill_id": enum_schema(words.skills)},
        )
        for agents, words in vocabulary.variants(lambda words: bool(words.skills))
    ]
    # No skill yet: nothing to credit, so the empty list only.
    if not variants:
        return list[SkillCredit], _at_most(0)
    pairs = sum(len(words.skills) for words in vocabulary.agents.values())
    return list[_one_of_models(variants)], _at_most(pairs)  # type: ignore[misc]


def _feedback_item(vocabulary: CriticVocabulary | None) -> Any:
    if vocabulary is None:
        return AgentFeedback
    return narrowed(AgentFeedback, "AgentFeedback", {"agent": enum_schema(list(vocabulary.agents))})


def _diagnosis_item(vocabulary: CriticVocabulary | None) -> Any:
    if vocabulary is None:
        return FailureDiagnosis
    variants: list[type[BaseModel]] = []
    # An agent without a failed step has nothing to be blamed for.
    for agents, words in vocabulary.variants(lambda words: bool(words.failed_refs)):
        name = f"FailureDiagnosis_{agents[0]}" if len(agents) == 1 else "FailureDiagnosis"
        common: dict[str, dict[str, Any]] = {
            "agent": enum_schema(agents),
            # The checks require a cited failed step of this agent; say so in the schema too.
            "failed_refs": _list_of(words.failed_refs, at_least=1),
            "successful_refs": _list_of(words.successful_refs),
        }
        # Without a tool error in a failed step no tool failed
        # (`check_tool_failure_has_tool_error`).
        no_tool = set() if words.failed_tool_errors else {"tool_failure"}
        # A named skill can be refined or left, never induced; without one there is nothing to
        # refine and no skill to blame (`check_induce_without_skill`, `check_refine_skill_owned`).
        # The 0.5B critic otherwise paired a skill with induce in every diagnosis, and repeated
        # it in the repair round.
        no_skill_name = name
        if words.skills:
            variants.append(
                _diagnosis_variant(
                    name, common, words.skills, ["refine", "no_edit"], excluded=no_tool
                )
            )
            no_skill_name = f"{name}_no_skill" if len(agents) == 1 else f"{name}NoSkill"
        variants.append(
            _diagnosis_variant(
                no_skill_name, common, (), ["induce", "no_edit"], excluded=no_tool | _SKILL_FAILURES
            )
        )
    return _one_of_models(variants) if variants else FailureDiagnosis


def _diagnosis_variant(
    name: str,
    common: dict[str, dict[str, Any]],
    skills: Sequence[str],
    actions: list[str],
    *,
    excluded: set[str] | frozenset[str],
) -> type[BaseModel]:
    return narrowed(
        FailureDiagnosis,
        name,
        {
            **common,
            "skill_id": {"anyOf": [enum_schema(skills) if skills else {"type": "null"}]},
            "failure_type": enum_schema([t for t in FAILURE_TYPES if t not in excluded]),
            "action": enum_schema(actions),
        },
    )


class CriticRepair(BaseModel):
    """Corrected diagnoses, in the order they were sent; credits may be added (for example the
    credit a refine diagnosis must match)."""

    diagnoses: list[FailureDiagnosis]
    credits: list[SkillCredit]


# --- checked critique -------------------------------------------------------------------------


class CheckedDiagnosis(BaseModel):
    """A diagnosis after the attribution checks (and possibly one repair round).

    `diagnosis` is the final version (the repaired one when status is repaired); `violations`
    are the violations of the first version; `final_violations` those left after the repair
    (non-empty only when dropped). `contrast` is how the agent's output ended in a cited
    failed run and in a successful run (`grse.contrast`; usable diagnoses only).
    """

    diagnosis: FailureDiagnosis
    status: DiagnosisStatus
    violations: list[str] = Field(default_factory=list)
    final_violations: list[str] = Field(default_factory=list)
    original: FailureDiagnosis | None = None
    is_hypothesis: bool = False
    contrast: OutputContrast | None = None

    @property
    def usable(self) -> bool:
        """Accepted or repaired diagnoses count as evidence; dropped ones do not."""
        return self.status != "dropped"


def count_diagnoses(diagnoses: Sequence[CheckedDiagnosis]) -> DiagnosisCounts:
    """Count a list of checked diagnoses by status (hypotheses among the kept ones)."""
    return DiagnosisCounts(
        accepted=sum(d.status == "accepted" for d in diagnoses),
        repaired=sum(d.status == "repaired" for d in diagnoses),
        dropped=sum(d.status == "dropped" for d in diagnoses),
        hypothesis=sum(d.usable and d.is_hypothesis for d in diagnoses),
    )


class CritiqueResult(BaseModel):
    """The checked critique of one question's group.

    `structured` is False for the `w/o structure` variant: the critic returns group-relative
    `credits` and `agent_feedback` as usual but no diagnoses (no schema for them, no checks).
    `payload_tokens` is the payload's size in critic tokens when it was fitted to a budget.
    `dropped_credits` counts credits for skills that are not in the named agent's library or that
    repeat an (agent, skill) pair already credited (the first one is kept). `critic_calls` counts
    critic requests of this class (1, or 2 with the attribution repair round); a schema repair
    inside `astructured_call` is not counted here (the usage ledger counts every request).
    """

    question_id: str
    category: str | None = None
    structured: bool = True
    credits: list[SkillCredit] = Field(default_factory=list)
    agent_feedback: list[AgentFeedback] = Field(default_factory=list)
    diagnoses: list[CheckedDiagnosis] = Field(default_factory=list)
    counts: DiagnosisCounts = Field(default_factory=DiagnosisCounts)
    dropped_credits: int = 0
    payload_chars: int = 0
    payload_tokens: int | None = None
    # Why the diagnoses are missing when the critic could not return valid ones for a failing
    # group; its credits and feedback were then kept from a credits-only call.
    diagnosis_error: str | None = None
    naive_payload_chars: int = 0
    critic_calls: int = 0
