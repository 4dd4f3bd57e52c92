"""Human review of proposed skill changes (`grse train --review`).

The review node raises one LangGraph `interrupt` per proposed change with a `ReviewRequest`;
the runner answers each with a `ReviewAnswer` through `Command(resume=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from grse_graph.errors import GrseError
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.skills.diff import skill_diff
from grse_graph.validation_text import describe_validation_error

Change = Literal["added", "changed", "removed"]


class ReviewRequest(BaseModel):
    """One proposed change of one agent's library, shown to the reviewer."""

    iteration: int
    agent: str
    skill: str
    change: Change
    before: str | None
    after: str | None
    diff: str


class ReviewAnswer(BaseModel):
    """The reviewer's verdict; `body` is the replacement skill body for `edit`."""

    verdict: Literal["accept", "reject", "edit"]
    body: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> ReviewAnswer:
        """Accept a `ReviewAnswer`, its dict form, or the bare words accept / reject."""
        if isinstance(raw, ReviewAnswer):
            return raw
        if isinstance(raw, str):
            raw = {"verdict": raw.strip().lower()}
        try:
            answer = cls.model_validate(raw)
        except ValidationError as error:
            raise GrseError(f"review answer {raw!r}: {describe_validation_error(error)}") from None
        if answer.verdict == "edit" and not (answer.body or "").strip():
            raise GrseError("review answer: verdict edit needs a non-empty body")
        return answer


def _by_name(library: SkillLibrary) -> dict[str, Skill]:
    return {skill.name: skill for skill in library.skills}


def proposed_changes(
    iteration: int, current: dict[str, SkillLibrary], candidates: dict[str, SkillLibrary]
) -> list[ReviewRequest]:
    """Every skill added, changed or removed by the candidates, in a stable order."""
    requests: list[ReviewRequest] = []
    for agent in sorted(candidates):
        old, new = _by_name(current[agent]), _by_name(candidates[agent])
        for name in sorted(set(old) | set(new)):
            before, after = old.get(name), new.get(name)
            if before == after:
                continue
            change: Change = (
                "added" if before is None else "removed" if after is None else "changed"
            )
            requests.append(
                ReviewRequest(
                    iteration=iteration,
                    agent=agent,
                    skill=name,
                    change=change,
                    before=before.to_markdown() if before is not None else None,
                    after=after.to_markdown() if after is not None else None,
                    diff=skill_diff(before, after),
                )
            )
    return requests


def apply_review(
    current: SkillLibrary,
    candidate: SkillLibrary,
    answers: Sequence[tuple[ReviewRequest, ReviewAnswer]],
) -> SkillLibrary:
    """The candidate library with rejected changes undone and edited bodies put in.

    Reject restores the current version (or drops an added skill, or keeps a removed one);
    edit puts the reviewer's body into the proposed skill (or into the kept one for a removal).
    """
    old, new = _by_name(current), _by_name(candidate)
    result: dict[str, Skill | None] = dict(new)
    for request, answer in answers:
        name = request.skill
        if answer.verdict == "accept":
            continue
        if answer.verdict == "reject":
            result[name] = old.get(name)
            continue
        base = new.get(name) or old.get(name)
        if base is None:
            raise GrseError(
                f"review of {request.agent}/{name}: the skill exists in neither library"
            )
        result[name] = base.with_body(answer.body or "")
    for name in old:
        result.setdefault(name, None)
    skills = [skill for skill in result.values() if skill is not None]
    return SkillLibrary.build(candidate.agent, skills, candidate.limit)
