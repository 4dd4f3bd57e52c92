"""One structured request to the optimizer role, and the failure an operator records instead.

Every operator that writes (refine's edits, induce's and consolidate's drafts, SkillMAS's
skills and descriptions) asks the optimizer for one schema object and, when the request fails
in a way it can live with, records why and leaves its state unchanged. Which failures those
are, and what sampling the call uses, is the operator's own setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from grse_graph.errors import GrseError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.llm.structured import astructured_call

M = TypeVar("M", bound=BaseModel)


async def ask_optimizer(
    provider: ChatModelProvider,
    schema: type[M],
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    sampling: SamplingSettings | None = None,
    recoverable: tuple[type[GrseError], ...] = (GrseError,),
) -> M | GrseError:
    """The optimizer's `schema` reply, or the error that left it without one when that error
    is `recoverable` (any other error propagates). `sampling` None: the role's own."""
    model = provider.chat("optimizer", sampling=sampling, max_tokens=max_tokens)
    try:
        return await astructured_call(model, schema, list(messages))
    except recoverable as error:
        return error


def unusable(error: GrseError) -> str:
    """The shared operators' reason for a failed request."""
    return f"optimizer output unusable: {error}"
