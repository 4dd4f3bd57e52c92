"""Translate the server's refusal of a request into `ModelRequestRefused` (one client path).

A 400 from an OpenAI-compatible server (a prompt beyond the context, an unsupported parameter)
is not transient, so retrying cannot help; callers that can afford to lose one unit of work
(a critic call) catch `ModelRequestRefused` without importing the transport library.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import openai

from grse_graph.errors import ModelRequestRefused


@contextmanager
def refusals_translated() -> Iterator[None]:
    """Inside this block an `openai.BadRequestError` becomes `ModelRequestRefused`."""
    try:
        yield
    except openai.BadRequestError as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ModelRequestRefused(f"the model server refused the request: {first}") from error
