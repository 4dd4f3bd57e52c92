"""Every structured-output method the embedded engine accepts returns a valid pydantic object,
streamed under the repetition watch, with the usage ledger counting the calls."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import StructuredMethod, load_config
from grse_graph.llm.roles import ModelRoles
from grse_graph.llm.structured import METHODS, structured_outcome

pytestmark = pytest.mark.engine

# Without any grammar SmolLM2-135M did not close the object within the cap (both runs of
# 2026-12-01 were cut off), so json_prompt is an expected failure here.
# json_object's grammar admits any object, so the 135M model may open with keys of its own before
# the schema's: after earlier calls had filled the engine's prompt cache its first object ran past
# a 96-token cap (CI and this machine, 2026-12-03) and closed well inside 256.
CAP_TOKENS = 256
ENGINE_METHODS = [
    pytest.param(
        method,
        marks=pytest.mark.xfail(reason="SmolLM2-135M without a grammar runs past the cap"),
    )
    if method == "json_prompt"
    else method
    for method in METHODS
]


class City(BaseModel):
    """A city and the country it is in."""

    name: str
    country: str


@pytest.mark.parametrize("method", ENGINE_METHODS)
@pytest.mark.parametrize("stream", [False, True])
def test_each_method_returns_a_valid_object(
    small_engine_url: str, method: StructuredMethod, stream: bool
) -> None:
    env = {"GRSE_CRITIC_STRUCTURED_METHOD": method, "GRSE_CRITIC_STRUCTURED_STREAM": str(stream)}
    roles = ModelRoles(load_config(env=env), UsageLedger(), engine_url=small_engine_url)
    outcome = structured_outcome(
        roles.chat("critic", max_tokens=CAP_TOKENS),
        City,
        [HumanMessage(content="Paris is the capital of France. Report the city and its country.")],
    )
    assert isinstance(outcome.value, City), outcome.attempts
    assert outcome.value.name.strip() and outcome.value.country.strip()
    assert all(attempt.method == method for attempt in outcome.attempts)
    usage = roles.ledger.report().role("critic")
    assert usage.calls == len(outcome.attempts)
    assert usage.completion_tokens > 0
