"""Token counting through the role's server, with the estimate as the visible fallback."""

from __future__ import annotations

import json

import httpx

from grse_graph.llm.tokens import ServerTokenCounter, approximate_tokens


def test_counts_with_the_vllm_or_llama_server_tokenize_route() -> None:
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        body = json.loads(request.content)
        return httpx.Response(200, json={"tokens": list(range(len(body["prompt"].split())))})

    counter = ServerTokenCounter("http://h:1/v1", "m", transport=httpx.MockTransport(handle))
    assert counter("a b c") == 3
    assert counter("a b c") == 3  # cached: one request per distinct text
    assert seen == ["/tokenize"] and counter.exact


def test_a_server_without_tokenize_gets_the_estimate_and_says_so() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(404, json={}))
    counter = ServerTokenCounter("http://h:1/v1", "m", transport=transport)
    text = "x" * 40
    assert counter(text) == approximate_tokens(text) == 10
    assert not counter.exact
