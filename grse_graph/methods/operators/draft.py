"""One optimizer call that drafts a whole skill (induce, consolidate), its body capped.

Both operators that write a new SKILL.md ask for a `SkillDraft` and cap its body at the token
cap the same way; what they do with the draft (its name, metadata, provenance) is their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from grse_graph.errors import GrseError
from grse_graph.methods.operators.ask import ask_optimizer, unusable
from grse_graph.methods.operators.base import OperatorContext
from grse_graph.methods.operators.schema import SkillDraft
from grse_graph.methods.operators.text import cap_body


@dataclass(frozen=True)
class CappedDraft:
    """The optimizer's draft with its body cut to the cap (`truncated` when it was cut)."""

    draft: SkillDraft
    body: str
    truncated: bool


async def draft_skill(
    ctx: OperatorContext, messages: Sequence[BaseMessage], max_tokens: int, what: str
) -> CappedDraft | str:
    """The capped draft, or why there is none (`what` names the skill in that reason: the
    "drafted" skill, the "merged" skill)."""
    draft = await ask_optimizer(ctx.provider, SkillDraft, messages, max_tokens=max_tokens)
    if isinstance(draft, GrseError):
        return unusable(draft)
    # The token counter may ask the server (blocking HTTP): off the event loop.
    body, truncated = await asyncio.to_thread(
        cap_body, draft.body, ctx.settings.body_token_cap, ctx.count_tokens
    )
    if not body:
        return f"the {what} skill has an empty body"
    return CappedDraft(draft=draft, body=body, truncated=truncated)
