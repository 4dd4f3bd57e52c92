"""The one client path: a `ChatOpenAI` per role with accounting attached."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Literal, Self

import httpx
import openai
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from grse_graph.errors import ConfigError, EngineError
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.affinity import stamp
from grse_graph.llm.config import LLMConfig, RoleSettings, StructuredMethod
from grse_graph.llm.engine import choose_engine
from grse_graph.llm.provider import ROLES, RoleName, SamplingSettings
from grse_graph.llm.slot_pinning import AsyncSlotPinningTransport, SlotPinning, SlotPinningTransport
from grse_graph.llm.structured import (
    SCHEMA_NARROWING_KEY,
    STRUCTURED_METHOD_KEY,
    STRUCTURED_STREAM_KEY,
)
from grse_graph.llm.tokens import ServerTokenCounter, TokenCounter
from grse_graph.llm.tool_transcript import TOOL_TRANSCRIPT_KEY, Transcript, recover_tool_calls
from grse_graph.llm.transport import (
    acall_with_reply_retries,
    call_with_reply_retries,
    endpoint_errors_translated,
)

EMBEDDED_API_KEY = "sk-grse-local"
"""Placeholder key for the embedded engine (it does not check keys, the client needs one)."""

UNAUTHENTICATED_API_KEY = "EMPTY"
"""Key sent to a remote endpoint configured without ``api_key_env`` (vLLM without ``--api-key``)."""

logger = logging.getLogger(__name__)


def _functions(request: Mapping[str, Any]) -> dict[str, Any]:
    return {
        tool["function"]["name"]: tool["function"]
        for tool in request.get("tools") or ()
        if isinstance(tool, Mapping) and tool.get("type") == "function"
    }


def _with_text_tool_calls(
    result: ChatResult, messages: Sequence[BaseMessage], request: Mapping[str, Any]
) -> ChatResult:
    """`result` with each reply that wrote calls of the offered tools as text turned into them."""
    offered = _functions(request) if request.get("tool_choice") != "none" else {}
    if not offered:
        return result
    # The replies so far in this conversation number the recovered calls' ids.
    model_call = sum(isinstance(message, AIMessage) for message in messages)
    generations = []
    for generation in result.generations:
        message = generation.message
        if isinstance(message, AIMessage):
            recovered = recover_tool_calls(message, offered, model_call=model_call)
            if recovered is not None:
                logger.info("tool call read back from the reply's text: %s", recovered.tool_calls)
                generation = ChatGeneration(
                    message=recovered, generation_info=generation.generation_info
                )
        generations.append(generation)
    return result.model_copy(update={"generations": generations})


FORCED_CALL_BY_SCHEMA_KEY = "grse_forced_call_by_schema"
"""Metadata key: the role's server needs a forced tool call spelled out as a JSON schema."""


def _forced_call_schema(request: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of the one call a request requires (a named ``tool_choice``, or "required"
    with one function offered), or None. llama.cpp's server rejects a named choice and did not
    constrain "required" with the Qwen2.5-Coder and SmolLM2 templates (both answered in prose);
    its ``json_schema`` field constrains the reply, which is read back as the call."""
    functions = _functions(request)
    choice = request.get("tool_choice")
    function = None
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        function = functions.get(str(choice.get("function", {}).get("name")))
    elif choice == "required" and len(functions) == 1:
        function = next(iter(functions.values()))
    if function is None:
        return None
    parameters = function.get("parameters") or {"type": "object"}
    return {
        "type": "object",
        "properties": {"name": {"const": function["name"]}, "arguments": parameters},
        "required": ["name", "arguments"],
    }


class RoleChatOpenAI(ChatOpenAI):
    """`ChatOpenAI` that sends ``tool_choice="auto"`` when tools come without a choice (no
    server's other default can hide them), reads calls written as text back as calls, asks again
    for a reply that is not a chat completion, and raises endpoint failures as one-line errors."""

    def _endpoint(self) -> dict[str, Any]:
        return {
            "role": str((self.metadata or {}).get("grse_role", "model")),
            "base_url": str(self.openai_api_base or "the default OpenAI endpoint"),
            "max_retries": self.max_retries,
        }

    def _request_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` with ``tool_choice="auto"`` for tools without a choice, and a required call's
        schema in ``extra_body`` where the server needs it."""
        if kwargs.get("tools") and kwargs.get("tool_choice") is None:
            kwargs = {**kwargs, "tool_choice": "auto"}
        schema = _forced_call_schema(kwargs)
        if schema is None or not (self.metadata or {}).get(FORCED_CALL_BY_SCHEMA_KEY):
            return kwargs
        extra = {**(self.extra_body or {}), **(kwargs.get("extra_body") or {})}
        # "required": the schema names the function; a named choice the server would reject.
        return {**kwargs, "tool_choice": "required", "extra_body": {**extra, "json_schema": schema}}

    # The overrides pass LangChain's stop, run_manager and options through, reading the tools.
    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        kwargs = self._request_kwargs(kwargs)

        def attempt() -> ChatResult:
            try:
                result = super(RoleChatOpenAI, self)._generate(messages, *args, **kwargs)
            except openai.LengthFinishReasonError as capped:
                # With a response_format openai's parse() raises for a reply at its cap (it
                # crashed `grse demo`); returned, it is read leniently and the ledger counts it.
                result = self._create_chat_result(capped.completion)
            return _with_text_tool_calls(result, messages, kwargs)

        return call_with_reply_retries(attempt, **self._endpoint())

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        kwargs = self._request_kwargs(kwargs)

        async def attempt() -> ChatResult:
            try:
                result = await super(RoleChatOpenAI, self)._agenerate(messages, *args, **kwargs)
            except openai.LengthFinishReasonError as capped:
                result = self._create_chat_result(capped.completion)
            return _with_text_tool_calls(result, messages, kwargs)

        return await acall_with_reply_retries(attempt, **self._endpoint())

    def _stream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        kwargs = self._request_kwargs(kwargs)
        # A stream cannot be asked for again once chunks went out: translated, not retried.
        with endpoint_errors_translated(**self._endpoint()):
            yield from super()._stream(messages, *args, **kwargs)

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        kwargs = self._request_kwargs(kwargs)
        with endpoint_errors_translated(**self._endpoint()):
            async for chunk in super()._astream(messages, *args, **kwargs):
                yield chunk


class ModelRoles:
    """`ChatModelProvider` backed by OpenAI-compatible endpoints (vLLM, llama.cpp, hosted APIs).
    Embedded roles use ``engine_url``, or its URL per embedded model (`RoleSettings.engine_model`);
    ``engine_slots`` maps an engine's URL to its slots, whose chat requests are then pinned."""

    def __init__(
        self,
        config: LLMConfig,
        ledger: UsageLedger,
        *,
        engine_url: str | Mapping[str, str] | None = None,
        engine_slots: Mapping[str, int] | None = None,
        env: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.engine_url = engine_url
        self._env = os.environ if env is None else env
        self._transport = transport
        self._async_transport = async_transport
        self._pinnings = tuple(
            SlotPinning(url, slots, repeatable=config.engine.repeatable_prompts)
            for url, slots in (engine_slots or {}).items()
        )
        self._sync_clients: dict[RoleName, httpx.Client] = {}
        self._token_counters: dict[RoleName, ServerTokenCounter] = {}
        # An httpx.AsyncClient is bound to the event loop it first ran on, so async clients are
        # kept per running loop (a later asyncio.run gets fresh ones).
        self._async_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[RoleName, httpx.AsyncClient]
        ] = weakref.WeakKeyDictionary()

    def settings(self, role: RoleName) -> RoleSettings:
        """The configured settings of a role."""
        if role not in ROLES:
            raise ConfigError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        return self.config.role(role)

    def concurrency(self, role: RoleName) -> int:
        """How many calls of this role may run at once."""
        return self.settings(role).concurrency

    def base_url(self, role: RoleName) -> str:
        """The endpoint this role talks to."""
        settings = self.settings(role)
        if settings.base_url is not None:
            return settings.base_url
        if self.engine_url is None:
            raise ConfigError(
                f"role {role} uses the embedded engine but none is running "
                f"(start LocalEngine and pass engine_url, or set GRSE_{role.upper()}_BASE_URL)"
            )
        if isinstance(self.engine_url, str):
            return self.engine_url
        model = self.config.embedded_model(role)
        url = self.engine_url.get(model)
        if url is None:
            raise ConfigError(
                f"role {role} runs on embedded model {model!r}, but no engine serves it "
                f"(running: {', '.join(self.engine_url) or 'none'})"
            )
        return url

    @functools.cached_property
    def _engine_found(self) -> bool:
        try:
            choose_engine(self.config.engine)
        except EngineError:
            return False
        return True

    def prefix_reloads(self) -> int:
        """Chat requests whose agent prefix had lost its engine slot to another prefix: more
        than a few call for a larger ``[engine] n_parallel``."""
        return sum(pinning.affinity.reloads for pinning in self._pinnings)

    def tool_transcript(self, role: RoleName) -> Transcript:
        """The role's tool transcript (``auto``: ``native``, which every server renders)."""
        setting = self.settings(role).tool_transcript
        return "native" if setting == "auto" else setting

    def forced_call(self, role: RoleName) -> Literal["tool_choice", "json_schema"]:
        """How the role asks for a required tool call, with ``auto`` resolved."""
        settings = self.settings(role)
        if settings.forced_call != "auto":
            return settings.forced_call
        return "json_schema" if settings.embedded else "tool_choice"

    def structured_method(self, role: RoleName) -> StructuredMethod:
        """The role's structured-output method; ``auto`` is ``json_schema`` on an embedded engine
        that can start here (both engines enforce it), else function calling."""
        settings = self.settings(role)
        if settings.structured_method != "auto":
            return settings.structured_method
        return "json_schema" if settings.embedded and self._engine_found else "function_calling"

    def api_key(self, role: RoleName) -> str:
        """The API key for this role: from its named variable, or a placeholder."""
        settings = self.settings(role)
        if settings.embedded:
            return EMBEDDED_API_KEY
        if settings.api_key_env is None:
            return UNAUTHENTICATED_API_KEY
        value = self._env.get(settings.api_key_env)
        if not value:
            raise ConfigError(
                f"role {role}: environment variable {settings.api_key_env} (api_key_env) is not set"
            )
        return value

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> ChatOpenAI:
        """A `ChatOpenAI` for the role; ``sampling`` and ``max_tokens`` override the role's
        defaults. Its ``metadata`` carries what `structured_call` and the team read."""
        settings = self.settings(role)
        chosen = sampling or SamplingSettings(
            temperature=settings.temperature, top_p=settings.top_p, top_k=settings.top_k
        )
        cap = max_tokens or settings.max_tokens
        extra = {
            "max_tokens": cap if settings.legacy_max_tokens else None,
            "top_k": chosen.top_k,
            "chat_template_kwargs": settings.chat_template_kwargs(self.config.model_name(role)),
        }
        sync_client, async_client = self._http_clients(role)
        return RoleChatOpenAI(
            model=settings.model,
            base_url=self.base_url(role),
            api_key=SecretStr(self.api_key(role)),
            temperature=chosen.temperature,
            top_p=chosen.top_p,
            seed=chosen.seed,
            max_tokens=cap,  # type: ignore[call-arg]
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
            extra_body={name: value for name, value in extra.items() if value is not None} or None,
            callbacks=[self.ledger.callback(role)],
            http_client=sync_client,
            http_async_client=async_client,
            metadata={
                "grse_role": role,
                STRUCTURED_METHOD_KEY: self.structured_method(role),
                STRUCTURED_STREAM_KEY: settings.structured_stream,
                SCHEMA_NARROWING_KEY: settings.schema_narrowing,
                TOOL_TRANSCRIPT_KEY: self.tool_transcript(role),
                FORCED_CALL_BY_SCHEMA_KEY: self.forced_call(role) == "json_schema",
            },
            # Streamed structured replies then still carry the server's usage (where it sends it).
            stream_usage=True,
            tags=[f"grse:{role}"],
        )

    def _http_clients(self, role: RoleName) -> tuple[httpx.Client, httpx.AsyncClient]:
        settings = self.settings(role)
        limits = httpx.Limits(max_connections=max(8, 2 * settings.concurrency))
        options: dict[str, Any] = {"limits": limits, "timeout": httpx.Timeout(settings.timeout_s)}

        def on_request(request: httpx.Request) -> None:
            self.ledger.count_request(role)
            stamp(request, settings.affinity_headers)

        async def on_async_request(request: httpx.Request) -> None:
            on_request(request)

        sync_client = self._sync_clients.get(role)
        if sync_client is None:
            transport = self._transport
            if self._pinnings:
                inner = transport or httpx.HTTPTransport(limits=limits)
                transport = SlotPinningTransport(self._pinnings, inner)
            sync_client = self._sync_clients[role] = httpx.Client(
                event_hooks={"request": [on_request]}, transport=transport, **options
            )
        try:
            per_loop = self._async_clients.setdefault(asyncio.get_running_loop(), {})
        except RuntimeError:  # no running loop: a client for this call only
            per_loop = {}
        async_client = per_loop.get(role)
        if async_client is None:
            async_transport = self._async_transport
            if self._pinnings:
                # One inner transport per client: its connections belong to this event loop.
                async_inner = async_transport or httpx.AsyncHTTPTransport(limits=limits)
                async_transport = AsyncSlotPinningTransport(self._pinnings, async_inner)
            async_client = per_loop[role] = httpx.AsyncClient(
                event_hooks={"request": [on_async_request]}, transport=async_transport, **options
            )
        return sync_client, async_client

    def token_counter(self, role: RoleName) -> TokenCounter:
        """Counts text in the role's model tokens, asked from its server (one per role)."""
        counter = self._token_counters.get(role)
        if counter is None:
            settings = self.settings(role)
            counter = self._token_counters[role] = ServerTokenCounter(
                self.base_url(role),
                settings.model,
                api_key=self.api_key(role),
                timeout_s=settings.timeout_s,
                transport=self._transport,
            )
        return counter

    def close(self) -> None:
        """Close the sync HTTP clients (async clients are released with their event loop)."""
        for sync_client in self._sync_clients.values():
            sync_client.close()
        self._sync_clients.clear()
        for counter in self._token_counters.values():
            counter.close()
        self._token_counters.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
