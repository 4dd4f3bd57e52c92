"""One agent's turn: system prompt with skills, a bounded tool loop, and the recorded `Step`.

The loop here is the ``function`` tool protocol (OpenAI function calling); the pieces every
protocol shares (the turn's input, usage metering, opening messages, running one tool) live
here too, and `grse_graph.team.tool_protocols` chooses the loop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration
from langchain_core.runnables import RunnableBinding, RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict

from grse_graph.llm.tool_transcript import tool_result_message, tool_transcript

from .layout import PROMPT_LAYOUTS, PromptLayout
from .rollout import CallEvent, Step, StepUsage, ToolCallRecord


class AgentTurnInput(BaseModel):
    """Everything one agent turn needs besides the model: prompts, tools and budgets."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    index: int
    agent: str
    system_prompt: str
    user_input: str
    input_ref: str | None = None
    task_tools: tuple[BaseTool, ...] = ()
    skill_tool: BaseTool | None = None
    max_tool_calls: int = 0
    max_skill_loads: int = 0
    force_first_tool: bool = False
    skills_present: tuple[str, ...] = ()
    prompt_layout: PromptLayout = "role_first"
    shared_input: str | None = None
    # Content hash of the library behind `skill_tool` (tool and path modes), whose bodies are
    # not in the system prompt; None when every skill the agent has is in its system prompt.
    skills_hash: str | None = None

    def step(
        self,
        output: str,
        tool_calls: list[ToolCallRecord],
        usage: StepUsage,
        call_events: Sequence[CallEvent] = (),
    ) -> Step:
        """The rollout step this turn made: its reply, tool calls and usage."""
        return Step(
            index=self.index,
            agent=self.agent,
            system_prompt=self.system_prompt,
            input=self.user_input,
            input_ref=self.input_ref,
            output=output.strip(),
            tool_calls=tool_calls,
            skills_present=list(self.skills_present),
            skills_hash=self.skills_hash,
            usage=usage,
            call_events=list(call_events),
        )


class PresampledReply(BaseModel):
    """A first model reply obtained before the turn: one choice of an `n`-sample call whose
    prompt a group of rollouts shares. `usage` is this reply's share of that call."""

    message: AIMessage
    usage: StepUsage


def usage_of(reply: AIMessage, latency_s: float) -> StepUsage:
    """Token usage (from `usage_metadata`) and latency of one model call."""
    meta: dict[str, Any] = dict(reply.usage_metadata or {})
    details: dict[str, Any] = dict(meta.get("input_token_details") or {})
    return StepUsage(
        prompt_tokens=int(meta.get("input_tokens", 0)),
        completion_tokens=int(meta.get("output_tokens", 0)),
        cached_prompt_tokens=int(details.get("cache_read", 0) or 0),
        model_calls=1,
        latency_s=latency_s,
    )


class UsageMeter:
    """Sums token usage and latency over the model calls of one turn."""

    def __init__(self) -> None:
        self.usage = StepUsage()

    async def call(
        self, model: Any, messages: Sequence[BaseMessage], config: RunnableConfig | None
    ) -> AIMessage:
        """One model call on `messages`, its usage added to the turn's."""
        started = time.perf_counter()
        reply = await model.ainvoke(list(messages), config=config)
        elapsed = time.perf_counter() - started
        if not isinstance(reply, AIMessage):
            raise TypeError(f"chat model returned {type(reply).__name__}, expected AIMessage")
        self.usage += usage_of(reply, elapsed)
        return reply

    def take(self, presampled: PresampledReply) -> AIMessage:
        """Use a presampled reply as this turn's call (its share of the usage counts)."""
        self.usage += presampled.usage
        return presampled.message


def _render_result(result: Any) -> str:
    if isinstance(result, ToolMessage):
        return result.text
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


async def execute_tool(
    tool: BaseTool, args: dict[str, Any], config: RunnableConfig | None
) -> ToolCallRecord:
    """Run one tool call. A tool that raises is recorded as a failed call, not a failed rollout:
    the agent sees the error and the critic can diagnose a tool failure."""
    try:
        result = await tool.ainvoke(args, config=config)
    except Exception as error:
        return ToolCallRecord(
            name=tool.name, arguments=args, error=f"{type(error).__name__}: {error}"
        )
    return ToolCallRecord(name=tool.name, arguments=args, result=_render_result(result))


def replayable(reply: AIMessage) -> AIMessage:
    """The tool-calling reply as it is sent back in the history.

    langchain-openai sends an empty content as `null` next to tool calls, which
    llama-cpp-python's server rejects (its assistant message needs a string); one space is
    accepted everywhere and changes nothing the model reads.
    """
    if reply.text.strip():
        return reply
    return reply.model_copy(update={"content": " "})


def _offered_tools(turn: AgentTurnInput, task_calls: int, skill_loads: int) -> list[BaseTool]:
    """The tools whose budgets are not spent yet."""
    offered: list[BaseTool] = []
    if task_calls < turn.max_tool_calls:
        offered.extend(turn.task_tools)
    if turn.skill_tool is not None and skill_loads < turn.max_skill_loads:
        offered.append(turn.skill_tool)
    return offered


def _bind(
    model: BaseChatModel, turn: AgentTurnInput, offered: list[BaseTool], *, first_call: bool
) -> Any:
    if turn.force_first_tool and first_call and turn.task_tools:
        # The first task tool alone, with a call required: llama.cpp's server honours
        # "required" but not a named function (it answered in prose), OpenAI and vLLM both.
        return model.bind_tools([turn.task_tools[0]], tool_choice="required")
    return model.bind_tools(offered)


def max_model_calls(turn: AgentTurnInput) -> int:
    """The model calls one turn may make: one per call its budgets allow, plus the answer."""
    return turn.max_tool_calls + turn.max_skill_loads + 1


def opening_messages(turn: AgentTurnInput) -> list[BaseMessage]:
    """The turn's first messages in its prompt layout (system prompt, task input)."""
    layout = PROMPT_LAYOUTS[turn.prompt_layout]
    return layout(turn.system_prompt, turn.user_input, turn.shared_input)


async def sample_first_replies(
    model: BaseChatModel,
    turn: AgentTurnInput,
    n: int,
    config: RunnableConfig | None = None,
    *,
    with_tools: bool = True,
) -> list[PresampledReply]:
    """The turn's first model call made once with `n` choices (OpenAI `n`), for a group of
    rollouts that share its prompt: the engine computes the prompt once. `with_tools` False
    makes the call without the turn's tools bound (a protocol whose calls are written as text).

    Returns the choices the server sent; a server that ignores `n` sends one, and callers make
    the missing calls themselves. Each choice's usage is an equal share of the call's (the
    response reports one usage for all choices); the first share carries the call count.
    """
    offered = _offered_tools(turn, 0, 0) if with_tools else []
    runnable: Any = (
        _bind(model, turn, offered, first_call=True)
        if offered and max_model_calls(turn) > 1
        else model
    )
    # bind_tools returns the model wrapped with its tool arguments; `agenerate` (which keeps
    # every choice, unlike `ainvoke`) lives on the model itself.
    target: Any = runnable.bound if isinstance(runnable, RunnableBinding) else runnable
    kwargs: dict[str, Any] = dict(runnable.kwargs) if isinstance(runnable, RunnableBinding) else {}
    if not isinstance(target, BaseChatModel):
        raise TypeError(f"cannot sample n choices from {type(target).__name__}")
    started = time.perf_counter()
    config = config or {}
    result = await target.agenerate(
        [opening_messages(turn)],
        callbacks=config.get("callbacks"),
        tags=config.get("tags"),
        metadata=config.get("metadata"),
        run_name=config.get("run_name"),
        n=n,
        **kwargs,
    )
    elapsed = time.perf_counter() - started
    messages = [
        g.message
        for g in result.generations[0]
        if isinstance(g, ChatGeneration) and isinstance(g.message, AIMessage)
    ]
    if not messages:
        raise TypeError("chat model returned no AIMessage choices")
    total = usage_of(messages[0], elapsed)
    count = len(messages)
    return [
        PresampledReply(
            message=message,
            usage=StepUsage(
                prompt_tokens=_share(total.prompt_tokens, count, i),
                completion_tokens=_share(total.completion_tokens, count, i),
                cached_prompt_tokens=_share(total.cached_prompt_tokens, count, i),
                model_calls=1 if i == 0 else 0,
                latency_s=total.latency_s / count,
            ),
        )
        for i, message in enumerate(messages)
    ]


def _share(total: int, parts: int, index: int) -> int:
    """Part `index` of `total` split into `parts` integers that sum to it."""
    return total // parts + (1 if index < total % parts else 0)


async def run_agent_turn(
    model: BaseChatModel,
    turn: AgentTurnInput,
    config: RunnableConfig | None = None,
    first_reply: PresampledReply | None = None,
) -> Step:
    """Run one agent by OpenAI function calling (the ``function`` tool protocol,
    `grse_graph.team.tool_protocols`): model calls with tools until it answers in text or its
    budgets run out.

    Task-tool calls are capped by `max_tool_calls` and skill loads by `max_skill_loads`; once a
    budget is spent that tool is no longer offered, and a call beyond it is answered with an
    error message (and recorded). The last possible model call is always made without tools, so
    the turn ends with text. `first_reply`, when given, stands in for the first model call
    (see `sample_first_replies`). On a ``text`` tool transcript (`grse_graph.llm.tool_transcript`)
    tool results go back as user messages and a reply that answers while tools are offered is
    asked again without them. Model and HTTP errors propagate to the caller.
    """
    meter = UsageMeter()
    messages = opening_messages(turn)
    records: list[ToolCallRecord] = []
    task_calls = 0
    skill_loads = 0
    by_name = {t.name: t for t in turn.task_tools}
    max_turns = max_model_calls(turn)
    transcript = tool_transcript(model)
    reply = AIMessage(content="")
    for model_call in range(max_turns):
        offered = _offered_tools(turn, task_calls, skill_loads)
        with_tools = bool(offered) and model_call < max_turns - 1
        if model_call == 0 and first_reply is not None:
            reply = meter.take(first_reply)
        else:
            bound = _bind(model, turn, offered, first_call=model_call == 0) if with_tools else model
            reply = await meter.call(bound, messages, config)
        if with_tools and not reply.tool_calls and transcript == "text":
            # This engine cannot write text while tools are offered: ask for it without them.
            reply = await meter.call(model, messages, config)
        if not reply.tool_calls or not with_tools:
            break
        messages.append(replayable(reply))
        for call in reply.tool_calls:
            name, args, call_id = call["name"], dict(call.get("args") or {}), call.get("id") or ""
            if turn.skill_tool is not None and name == turn.skill_tool.name:
                if skill_loads >= turn.max_skill_loads:
                    record = ToolCallRecord(
                        name=name, arguments=args, error="skill load limit reached"
                    )
                else:
                    skill_loads += 1
                    record = await execute_tool(turn.skill_tool, args, config)
            elif name in by_name:
                if task_calls >= turn.max_tool_calls:
                    record = ToolCallRecord(
                        name=name, arguments=args, error="tool call limit reached"
                    )
                else:
                    task_calls += 1
                    record = await execute_tool(by_name[name], args, config)
            else:
                # An invented tool name still spends budget, so a confused model cannot loop.
                task_calls += 1
                record = ToolCallRecord(name=name, arguments=args, error=f"unknown tool {name!r}")
            records.append(record)
            content = record.result if record.error is None else f"Error: {record.error}"
            messages.append(
                tool_result_message(
                    transcript, name=name, arguments=args, call_id=call_id, content=content
                )
            )
    return turn.step(reply.text, records, meter.usage)
