"""The one seam between the method code and chat models: everything that needs a model receives a
`ChatModelProvider` (`ModelRoles`, or the fakes of unit tests) and asks it for a role's model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # a return annotation only: reading roles and settings needs no langchain
    from langchain_core.language_models import BaseChatModel

RoleName = Literal["actor", "critic", "optimizer"]
ROLES: tuple[RoleName, ...] = ("actor", "critic", "optimizer")


class SamplingSettings(BaseModel):
    """Decoding settings of one call. Greedy by default (evaluation); training overrides."""

    model_config = ConfigDict(frozen=True)

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=1)
    seed: int | None = None

    @classmethod
    def greedy(cls) -> SamplingSettings:
        """Temperature 0: the evaluation and test setting."""
        return cls()

    @classmethod
    def training(cls, top_k: int | None = 20, seed: int | None = None) -> SamplingSettings:
        """The paper's training sampling: temperature 1.0, top-p 0.95, top-k 20 (Qwen)."""
        return cls(temperature=1.0, top_p=0.95, top_k=top_k, seed=seed)


@runtime_checkable
class ChatModelProvider(Protocol):
    """Returns the chat model for a role, optionally with per-call sampling and a token cap."""

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel: ...
