"""The structured call: the chosen method's request, a reply received whole or streamed under a
repetition watch, lenient parsing and validation, one repair round, then an error."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Generator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Generic, TypedDict, TypeVar, Unpack, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from pydantic import BaseModel, ConfigDict, ValidationError

from grse_graph.errors import RunawayGenerationStopped, StructuredOutputError
from grse_graph.llm.config import StructuredMethod
from grse_graph.llm.structured.budget import schema_token_budget
from grse_graph.llm.structured.lenient import parse_json_object
from grse_graph.llm.structured.methods import (
    MAX_SHOWN_CHARS,
    METHODS,
    StructuredOutputMethod,
    structured_method,
)
from grse_graph.llm.transport import refusals_translated
from grse_graph.validation_text import describe_validation_error

T = TypeVar("T", bound=BaseModel)

STRUCTURED_STREAM_KEY = "grse_structured_stream"
"""Model ``metadata`` key: stream structured replies under a repetition watch."""

_log = logging.getLogger(__name__)

# A runaway tail (small models loop to the token cap, in a grammar or not): _MIN_REPEATS copies of
# a passage of at most _MAX_PERIOD characters spanning _MIN_SPAN; a stream shows it after a few
# copies and is checked every _CHECK_EVERY new characters, negligible beside generation.
_MIN_REPEATS = 4
_MIN_SPAN = 160
_MAX_PERIOD = 1200
_CHECK_EVERY = 32


@dataclass(frozen=True)
class Repetition:
    """A repeating tail: ``period`` characters repeated ``repeats`` times."""

    period: int
    repeats: int

    def describe(self) -> str:
        """One line for logs and the repair message."""
        return (
            f"the same {self.period}-character passage was repeated {self.repeats} times in a row"
        )


def find_repetition(text: str) -> Repetition | None:
    """The shortest period whose copies make up a long enough tail of ``text``, or None."""
    length = len(text)
    for period in range(1, min(_MAX_PERIOD, length // _MIN_REPEATS) + 1):
        needed = max(_MIN_REPEATS * period, _MIN_SPAN)
        if needed > length:
            continue
        # The last `needed` characters are `period`-periodic when they equal themselves shifted.
        if text[length - needed + period :] != text[length - needed : length - period]:
            continue
        span = needed
        while (
            span + period <= length
            and text[length - span - period : length - span]
            == text[length - span : length - span + period]
        ):
            span += period
        return Repetition(period=period, repeats=span // period)
    return None


class StructuredAttempt(BaseModel):
    """One request of a structured call (`benchmarks/structured.py` reports them)."""

    model_config = ConfigDict(frozen=True)

    method: StructuredMethod
    valid: bool
    problem: str = ""
    lenient_repair: str = ""
    """Which lenient repair made the JSON parse ("" none, "literals", "closed")."""
    runaway: str = ""
    """Why the stream was stopped early ("" when it was not)."""
    streamed_chunks: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class StructuredOutcome(Generic[T]):
    """The object (None when every attempt failed), the attempts, and the final error."""

    value: T | None
    attempts: tuple[StructuredAttempt, ...]
    error: StructuredOutputError | None = None

    def unwrap(self) -> T:
        """The object, or raise the error."""
        if self.value is None:
            assert self.error is not None
            raise self.error
        return self.value


@dataclass(frozen=True)
class _Reply:
    message: AIMessage | None
    repetition: Repetition | None = None
    chunks: int = 0


def cap_parameters(model: BaseChatModel, schema: type[BaseModel]) -> dict[str, Any]:
    """Request parameters lowering the reply cap to `schema_token_budget` when the schema is
    bounded and the model's own cap is larger (or unset); empty otherwise."""
    budget = schema_token_budget(schema)
    if budget is None:
        return {}
    current = getattr(model, "max_tokens", None)
    if isinstance(current, int) and current <= budget:
        return {}
    parameters: dict[str, Any] = {"max_tokens": budget}
    extra = getattr(model, "extra_body", None)
    if isinstance(extra, dict) and "max_tokens" in extra:
        # The roles also send the cap in the body for servers that ignore the OpenAI field.
        parameters["extra_body"] = {**extra, "max_tokens": budget}
    return parameters


class _Streamed:
    """A streamed reply as it arrives, its tail checked for repetition (`find_repetition`)."""

    def __init__(self, model: BaseChatModel) -> None:
        self._role = (getattr(model, "metadata", None) or {}).get("grse_role", "model")
        self._message: AIMessageChunk | None = None
        self._chunks = 0
        self._text = ""
        self._checked_at = 0
        self._runaway: Repetition | None = None

    def add(self, chunk: AIMessageChunk) -> RunawayGenerationStopped | None:
        """Take ``chunk``; the stop to throw into the stream once the reply's tail repeats."""
        self._chunks += 1
        self._message = chunk if self._message is None else self._message + chunk
        arguments = "".join(str(piece.get("args") or "") for piece in chunk.tool_call_chunks)
        self._text += chunk.text + arguments
        if len(self._text) - self._checked_at < _CHECK_EVERY:
            return None
        self._checked_at = len(self._text)
        self._runaway = find_repetition(self._text)
        if self._runaway is None:
            return None
        return RunawayGenerationStopped(
            f"{self._role} reply stopped early: {self._runaway.describe()}"
        )

    def reply(self) -> _Reply:
        return _Reply(self._message, self._runaway, self._chunks)


_Read = tuple[T | None, StructuredAttempt, str]
"""The object read (None: none), the attempt, and the reply as shown back to the model."""


def _read(
    method: StructuredOutputMethod, schema: type[T], reply: _Reply, seconds: float
) -> _Read[T]:
    def read(parsed: T | None, problem: str = "", shown: str = "", repair: str = "") -> _Read[T]:
        attempt = StructuredAttempt(
            method=method.name,
            valid=parsed is not None,
            problem=" ".join(problem.split()),
            lenient_repair=repair,
            runaway=reply.repetition.describe() if reply.repetition else "",
            streamed_chunks=reply.chunks,
            seconds=seconds,
        )
        return parsed, attempt, shown[:MAX_SHOWN_CHARS]

    if reply.message is None:
        return read(None, "the model returned nothing", "(empty reply)")
    text = method.reply_text(reply.message, schema)
    if reply.repetition is not None:
        # Shown once, not with every copy: the model needs to see the loop, not relive it.
        extra_copies = (reply.repetition.repeats - 1) * reply.repetition.period
        once = text.json_text[: max(0, len(text.json_text) - extra_copies)]
        return read(
            None,
            f"the reply was stopped because {reply.repetition.describe()}; give each item once",
            once + " ... (stopped here)",
        )
    found = parse_json_object(text.json_text)
    if found.value is None:
        no_object = found.problem == "the reply contains no JSON object"
        return read(None, (no_object and text.problem_without_json) or found.problem, text.shown)
    try:
        return read(schema.model_validate(found.value), repair=found.repair)
    except ValidationError as error:
        return read(None, describe_validation_error(error), text.shown, found.repair)


class StructuredOptions(TypedDict, total=False):
    """The keyword options of `structured_outcome` and `astructured_outcome`."""

    max_repairs: int
    """Repair rounds after the first request (default 1)."""
    method: StructuredMethod | None
    """The structured-output method (default None: the one in the model's metadata)."""


class _Call(Generic[T]):
    """The state of one structured call across its attempts."""

    def __init__(
        self,
        model: BaseChatModel,
        schema: type[T],
        messages: Sequence[BaseMessage],
        options: StructuredOptions,
    ) -> None:
        self.schema = schema
        self.method = METHODS[options.get("method") or structured_method(model)]
        self.request = self.method.request(model, schema, messages)
        self.parameters = {**self.request.parameters, **cap_parameters(model, schema)}
        self.streamed = bool((getattr(model, "metadata", None) or {}).get(STRUCTURED_STREAM_KEY))
        self.max_repairs = options.get("max_repairs", 1)
        self.history = list(self.request.opening)
        self.attempts: list[StructuredAttempt] = []
        self.value: T | None = None

    @property
    def pending(self) -> bool:
        return self.value is None and len(self.attempts) <= self.max_repairs

    def ask(self) -> _Reply:
        model, history, options = self.request.model, self.history, self.parameters
        with refusals_translated():
            if not self.streamed:
                return _Reply(_as_message(model.invoke(history, **options)))
            streamed = _Streamed(model)
            stream = cast(Generator[AIMessageChunk, None, None], model.stream(history, **options))
            try:
                for chunk in stream:
                    if (stop := streamed.add(chunk)) is not None:
                        # Thrown into the model's own stream: its callbacks (the ledger) see it.
                        with suppress(RunawayGenerationStopped):
                            stream.throw(stop)
                        break
            finally:
                stream.close()
            return streamed.reply()

    async def aask(self) -> _Reply:
        model, history, options = self.request.model, self.history, self.parameters
        with refusals_translated():
            if not self.streamed:
                return _Reply(_as_message(await model.ainvoke(history, **options)))
            streamed = _Streamed(model)
            stream = cast(AsyncGenerator[AIMessageChunk, None], model.astream(history, **options))
            try:
                async for chunk in stream:
                    if (stop := streamed.add(chunk)) is not None:
                        with suppress(RunawayGenerationStopped):
                            await stream.athrow(stop)
                        break
            finally:
                await stream.aclose()
            return streamed.reply()

    def run(self) -> StructuredOutcome[T]:
        while self.pending:
            started = time.perf_counter()
            self.record(self.ask(), started)
        return self.outcome()

    async def arun(self) -> StructuredOutcome[T]:
        while self.pending:
            started = time.perf_counter()
            self.record(await self.aask(), started)
        return self.outcome()

    def record(self, reply: _Reply, started: float) -> None:
        self.value, attempt, shown = _read(
            self.method, self.schema, reply, time.perf_counter() - started
        )
        self.attempts.append(attempt)
        if attempt.runaway:
            _log.warning("%s: %s", self.schema.__name__, attempt.runaway)
        if self.value is None and self.pending:
            problem = f"That output is not a valid {self.schema.__name__}: {attempt.problem}"
            again = HumanMessage(content=f"{problem}\n{self.method.ask_again(self.schema)}")
            self.history += [AIMessage(content=shown), again]

    def outcome(self) -> StructuredOutcome[T]:
        if self.value is not None:
            return StructuredOutcome(self.value, tuple(self.attempts))
        problem = self.attempts[-1].problem if self.attempts else "no attempt"
        error = StructuredOutputError(
            f"{self.schema.__name__}: no valid output after {self.max_repairs + 1} attempt(s): "
            f"{problem}"
        )
        return StructuredOutcome(None, tuple(self.attempts), error)


def structured_outcome(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    **options: Unpack[StructuredOptions],
) -> StructuredOutcome[T]:
    """`structured_call` that returns every attempt instead of raising."""
    return _Call(model, schema, messages, options).run()


async def astructured_outcome(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    **options: Unpack[StructuredOptions],
) -> StructuredOutcome[T]:
    """Async `structured_outcome`."""
    return await _Call(model, schema, messages, options).arun()


def _as_message(result: object) -> AIMessage | None:
    return result if isinstance(result, AIMessage) else None


def structured_call(
    model: BaseChatModel, schema: type[T], messages: Sequence[BaseMessage], *, max_repairs: int = 1
) -> T:
    """Ask ``model`` for a ``schema`` object with the method in its metadata (see
    `grse_graph.llm.structured`): a failed reply is shown back with its problem up to
    ``max_repairs`` times, then `StructuredOutputError`; never a default object."""
    return structured_outcome(model, schema, messages, max_repairs=max_repairs).unwrap()


async def astructured_call(
    model: BaseChatModel, schema: type[T], messages: Sequence[BaseMessage], *, max_repairs: int = 1
) -> T:
    """Async `structured_call`."""
    return (await astructured_outcome(model, schema, messages, max_repairs=max_repairs)).unwrap()
