"""Counting tokens the way a role's server counts them: ``POST /tokenize`` (vLLM and llama.cpp),
else, for a server without it (a hosted API), the `approximate_tokens` estimate, logged once.
Counts are cached per text, so fitting a payload step by step costs one request per rendering.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import httpx

logger = logging.getLogger(__name__)

BYTES_PER_TOKEN_ESTIMATE = 4.0
"""UTF-8 bytes per token of the fallback estimate (English prose with BPE tokenizers)."""
TokenCounter = Callable[[str], int]
"""Counts the tokens of a text."""


@runtime_checkable
class CountsTokens(Protocol):
    """A model provider that can count tokens for a role (`ModelRoles` does)."""

    def token_counter(self, role: Any) -> TokenCounter: ...


def approximate_tokens(text: str) -> int:
    """An estimate: UTF-8 bytes / `BYTES_PER_TOKEN_ESTIMATE`, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN_ESTIMATE)


class ServerTokenCounter:
    """Token counts from the server behind `base_url`; once it does not answer its tokenize
    route, `exact` is False and every count is `approximate_tokens`."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, timeout=timeout_s, transport=transport)
        self.exact = True
        self._cache: dict[str, int] = {}

    def _ask(self, text: str) -> int | None:
        # vLLM reads `prompt`, llama.cpp's server `content`.
        body = {"model": self.model, "prompt": text, "content": text}
        try:
            reply = self._client.post(self.root + "/tokenize", json=body)
        except httpx.HTTPError:
            return None
        tokens = reply.json().get("tokens") if reply.status_code == 200 else None
        return len(tokens) if isinstance(tokens, list) else None

    def __call__(self, text: str) -> int:
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if key not in self._cache:
            count = self._ask(text) if self.exact else None
            if count is None and self.exact:
                self.exact = False
                logger.warning(
                    "%s has no tokenize route; token counts are estimates (%.0f bytes/token)",
                    self.root,
                    BYTES_PER_TOKEN_ESTIMATE,
                )
            self._cache[key] = approximate_tokens(text) if count is None else count
        return self._cache[key]

    def close(self) -> None:
        """Release the HTTP connection."""
        self._client.close()
