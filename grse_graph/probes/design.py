"""Which team runs a probe makes: the skills, the masks per question, and the budget they fit.

A probe measures each skill's effect by execution: the team answers the same questions greedily
with the full libraries and with skills masked (removed from their agent's library), and the
paired reward difference is the skill's effect. Two designs:

- `leave_one_out`: per question, the full libraries plus one run per skill with that skill
  masked: Q x (S + 1) runs, and each effect is a direct with/without comparison.
- `random_masks`: per question, the full libraries plus M runs, each masking every skill
  independently with probability 1 - `keep_probability` (as in ContextCite and "Not All Skills
  Help"): Q x (M + 1) runs whatever S is, for libraries too large for leave-one-out.

`auto` takes leave-one-out when it fits the budget on every question, else random masks with at
least `MIN_RANDOM_MASKS` masks per question, else leave-one-out on as many questions as fit.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.errors import GrseError
from grse_graph.skills import SkillLibrary

ProbeDesign = Literal["leave_one_out", "random_masks"]
MIN_RANDOM_MASKS = 4
"""Fewer masks per question than this estimate each effect from too few absent/present runs."""
MIN_PROBE_QUESTIONS = 2


class ProbeError(GrseError):
    """A probe that cannot be made as asked (no skills, no questions, a budget too small)."""


class SkillRef(BaseModel):
    """One agent's skill."""

    model_config = ConfigDict(frozen=True)

    agent: str
    skill: str

    @property
    def key(self) -> str:
        """``agent/skill``."""
        return f"{self.agent}/{self.skill}"


class ProbeSettings(BaseModel):
    """How a probe is made and read.

    `budget` bounds the team runs of one probe (full-library runs included). `questions` is how
    many questions a probe inside training uses (the audit takes its split and `--limit`).
    Effects are read with a percentile bootstrap over questions (`resamples`, `confidence`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget: int = Field(default=120, ge=2)
    design: Literal["auto", "leave_one_out", "random_masks"] = "auto"
    keep_probability: float = Field(default=0.5, gt=0.0, lt=1.0)
    questions: int = Field(default=8, ge=MIN_PROBE_QUESTIONS)
    split: str = "train"
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    resamples: int = Field(default=2000, ge=100)
    seed: int = 0


class ProbeRequest(BaseModel):
    """One team run of a probe: a question under the libraries with `masked` removed."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    masked: tuple[SkillRef, ...] = ()

    @property
    def is_full(self) -> bool:
        """Whether this is the full-library run of its question."""
        return not self.masked

    def run_id(self, libraries_hash: str) -> str:
        """A stable id: the libraries, the question and the masked skills."""
        mask = "+".join(sorted(ref.key for ref in self.masked)) or "full"
        return f"{libraries_hash}:{self.question_id}:{mask}"


class ProbePlan(BaseModel):
    """The runs of one probe in the order they are made: full-library runs first, then
    leave-one-out's masked runs skill by skill (random masks question by question)."""

    design: ProbeDesign
    skills: list[SkillRef]
    questions: list[str]
    requests: list[ProbeRequest]
    budget: int
    # Questions offered but left out so that leave-one-out fits the budget.
    questions_left_out: int = 0

    @property
    def runs(self) -> int:
        """Team runs the plan makes."""
        return len(self.requests)


def library_skills(libraries: Mapping[str, SkillLibrary]) -> list[SkillRef]:
    """Every skill of every agent, in agent then name order."""
    return [
        SkillRef(agent=agent, skill=name)
        for agent, lib in libraries.items()
        for name in lib.names()
    ]


def libraries_hash(libraries: Mapping[str, SkillLibrary]) -> str:
    """A short fingerprint of the probed libraries (run ids of other libraries never match)."""
    text = "\n".join(f"{agent}:{lib.content_hash()}" for agent, lib in sorted(libraries.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def masked_libraries(
    libraries: Mapping[str, SkillLibrary], masked: Sequence[SkillRef]
) -> dict[str, SkillLibrary]:
    """The libraries with the `masked` skills removed (an agent may be left with none)."""
    out = dict(libraries)
    for ref in masked:
        out[ref.agent] = out[ref.agent].remove(ref.skill)
    return out


def _random_masks(
    skills: Sequence[SkillRef], question_id: str, count: int, settings: ProbeSettings
) -> list[tuple[SkillRef, ...]]:
    # Seeded per question so a resumed or repeated probe draws the same masks; a mask equal to
    # the full libraries or to an earlier mask is drawn again (bounded: duplicates are kept
    # when the library is too small to give `count` distinct masks).
    rng = random.Random(f"{settings.seed}:{question_id}")
    masks: list[tuple[SkillRef, ...]] = []
    for _ in range(count):
        mask: tuple[SkillRef, ...] = ()
        for _attempt in range(20):
            mask = tuple(s for s in skills if rng.random() >= settings.keep_probability)
            if mask and mask not in masks:
                break
        masks.append(mask or (skills[rng.randrange(len(skills))],))
    return masks


def plan_probes(
    libraries: Mapping[str, SkillLibrary], question_ids: Sequence[str], settings: ProbeSettings
) -> ProbePlan:
    """The probe's runs within `settings.budget` (ProbeError when no design fits)."""
    skills = library_skills(libraries)
    if not skills:
        raise ProbeError("nothing to probe: every library is empty")
    questions = list(dict.fromkeys(question_ids))
    if len(questions) < MIN_PROBE_QUESTIONS:
        raise ProbeError(
            f"a probe needs at least {MIN_PROBE_QUESTIONS} questions, got {len(questions)}"
        )
    budget, n_skills = settings.budget, len(skills)
    loo_fits = len(questions) * (n_skills + 1) <= budget
    masks_per_question = budget // len(questions) - 1
    design: ProbeDesign
    if settings.design == "leave_one_out" or (settings.design == "auto" and loo_fits):
        design = "leave_one_out"
    elif masks_per_question >= MIN_RANDOM_MASKS:
        design = "random_masks"
    elif settings.design == "random_masks":
        raise ProbeError(
            f"a budget of {budget} team runs gives {max(masks_per_question, 0)} random masks "
            f"per question on {len(questions)} questions; at least "
            f"{len(questions) * (MIN_RANDOM_MASKS + 1)} runs are needed"
        )
    else:
        design = "leave_one_out"
    kept = questions
    if design == "leave_one_out" and not loo_fits:
        kept = questions[: budget // (n_skills + 1)]
        if len(kept) < MIN_PROBE_QUESTIONS:
            raise ProbeError(
                f"a budget of {budget} team runs is too small to probe {n_skills} skills: "
                f"at least {MIN_PROBE_QUESTIONS * (n_skills + 1)} runs are needed"
            )
    requests = [ProbeRequest(question_id=q) for q in kept]
    if design == "leave_one_out":
        # Skill by skill, so that consecutive runs share every agent's prompt prefix (role,
        # skills): an engine that keeps a few prefixes cached (`slot_pinning`) computes each
        # once per skill instead of once per question. In question order the demo's probe
        # cycled through six prefixes on four engine slots.
        requests += [ProbeRequest(question_id=q, masked=(ref,)) for ref in skills for q in kept]
    else:
        for q in kept:
            masks = _random_masks(skills, q, masks_per_question, settings)
            requests += [ProbeRequest(question_id=q, masked=mask) for mask in masks]
    return ProbePlan(
        design=design,
        skills=skills,
        questions=kept,
        requests=requests,
        budget=budget,
        questions_left_out=len(questions) - len(kept),
    )
