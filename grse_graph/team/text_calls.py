"""One agent turn under the ``text`` tool protocol: the agent writes its tool calls as tags in
its reply (`grse_graph.team.tag_calls`) and the environment parses and runs them.

This is the paper's LoCoMo retriever protocol (grse.txt:445; GUIDE §4): no function calling,
so the turn does not depend on a chat template's tool parsing. The turn:

1. The system prompt ends with the tool-call instructions (`text_call_instructions`: the tag of
   each tool, its description and the budget), appended by the environment after the role and
   skills.
2. Each reply is parsed for calls. A reply without any tag ends the turn: it is the agent's
   response (its hand-off). A reply with calls gets one user message holding, in the order
   written, each call's result (the tool's own text: for grep up to 20 matching turns as
   ``[D<session>:<turn>] (<date>) <speaker> said, "..."``), a note for each call not run, and
   how many calls are left.
3. Calls run while the turn's budgets last: `max_tool_calls` for the task tools together (the
   paper's retriever: 3 grep calls per question) and `max_skill_loads` for the skill tool.
   A call beyond its budget is not run; the agent is told so and it is recorded
   (``over_budget``).
4. A malformed tag (unclosed, empty, nested, a closing tag alone) is not run and spends no
   budget; the agent is told what was wrong. A call whose argument fails the tool's check (a
   grep pattern that is not a valid regular expression) runs (grep then searches it as plain
   text and says so) and is counted as ``invalid_argument``.
5. Once every budget is spent, or after as many rounds of calls as the budgets allow in all,
   the next reply is the last: calls in it are recorded as not run and the reply is the
   response (the paper counts a response that prints a grep call as one without evidence).

Every call is recorded as a `ToolCallRecord` like a function call (the tool's one argument by
its name, e.g. ``{"query": ...}``), so critic payloads, credit, probes and reports read the same
steps under both protocols; every problem is also a `CallEvent` of the step and a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from grse_graph.errors import ConfigError

from .agent import AgentTurnInput, PresampledReply, UsageMeter, execute_tool, opening_messages
from .rollout import CallEvent, Step, ToolCallRecord
from .tag_calls import MalformedTag, TagCall, TagItem, call_tag, parse_tag_calls

logger = logging.getLogger(__name__)

ArgumentCheck = Callable[[str], str | None]
"""A tool's check of one argument: why it is not what the tool expects, or None."""

LIMIT_REACHED = "tool call limit reached"
"""The error of a call beyond its budget (the same words as under function calling)."""

_PROBLEMS: dict[str, str] = {
    "unclosed": "has no closing tag",
    "empty": "has nothing between its tags",
    "nested": "has a tool tag inside it",
    "unopened": "is a closing tag without its opening tag",
}


def tool_argument(tool: BaseTool) -> str:
    """The name of `tool`'s one argument. A tool with another number of arguments cannot be
    called as a tag: `ConfigError` naming it."""
    names = list(tool.args)
    if len(names) != 1:
        raise ConfigError(
            f"tool {tool.name!r} takes {len(names)} arguments; the text tool protocol calls "
            'tools of exactly one argument (use tool_protocol = "function")'
        )
    return names[0]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def text_call_instructions(turn: AgentTurnInput, examples: Mapping[str, str] | None = None) -> str:
    """The tool-call instructions the environment appends to the turn's system prompt; empty
    when the turn offers no tool. `examples` maps tool names to an example argument, shown in
    the example call (a placeholder otherwise)."""
    groups: list[tuple[Sequence[BaseTool], int]] = []
    if turn.task_tools and turn.max_tool_calls > 0:
        groups.append((turn.task_tools, turn.max_tool_calls))
    if turn.skill_tool is not None and turn.max_skill_loads > 0:
        groups.append(((turn.skill_tool,), turn.max_skill_loads))
    if not groups:
        return ""
    first = groups[0][0][0]
    example = (examples or {}).get(first.name, tool_argument(first).upper())
    lines = [
        "## Tool calls",
        "Call a tool by writing the call in your reply as its tag around the input, e.g. "
        f"{call_tag(first.name, example)}: the text "
        "between the opening and the closing tag is the input, as it is (no quotes, no JSON). "
        "The environment runs the calls of your reply and sends their results in the next "
        "message, so write your calls and stop there. A reply without any call is your final "
        "response and goes on as it is.",
        "",
    ]
    for tools, budget in groups:
        for tool in tools:
            tag = call_tag(tool.name, tool_argument(tool).upper())
            lines.append(f"- {tag}: {_one_line(tool.description)}")
        names = ", ".join(tool.name for tool in tools)
        lines.append(
            f"At most {budget} {'call' if budget == 1 else 'calls'} of {names} run for this "
            "question; calls beyond them are not run."
        )
    return "\n".join(lines)


class _Budget:
    """Calls left for one group of tools in one turn."""

    def __init__(self, tools: Sequence[BaseTool], limit: int) -> None:
        self.names = [tool.name for tool in tools]
        self.limit = limit
        self.used = 0

    @property
    def left(self) -> int:
        return self.limit - self.used


class _Answer(BaseModel):
    """What the environment made of one tag: the record, the text sent back, the event."""

    record: ToolCallRecord
    message: str
    event: CallEvent | None = None


class _TextTurn:
    """The state of one text-protocol turn: its tools, budgets, records and events."""

    def __init__(
        self, turn: AgentTurnInput, checks: Mapping[str, ArgumentCheck], config: RunnableConfig
    ) -> None:
        self.turn = turn
        self.checks = checks
        self.config = config
        self.tools: dict[str, BaseTool] = {t.name: t for t in turn.task_tools}
        task = _Budget(turn.task_tools, turn.max_tool_calls)
        self.budgets: dict[str, _Budget] = {t.name: task for t in turn.task_tools}
        if turn.skill_tool is not None:
            self.tools[turn.skill_tool.name] = turn.skill_tool
            self.budgets[turn.skill_tool.name] = _Budget((turn.skill_tool,), turn.max_skill_loads)
        self.records: list[ToolCallRecord] = []
        self.events: list[CallEvent] = []

    @property
    def spent(self) -> bool:
        """Whether no call can run any more in this turn."""
        return all(budget.left <= 0 for budget in self.budgets.values())

    def _event(self, kind: str, tool: str, text: str) -> CallEvent:
        event = CallEvent.model_validate({"kind": kind, "tool": tool, "text": text})
        logger.info("%s: %s call of %s: %s", self.turn.agent, kind, tool, _one_line(text))
        return event

    def malformed(self, item: MalformedTag) -> _Answer:
        """A malformed tag: recorded as a call that did not run, spending no budget."""
        problem = _PROBLEMS[item.problem]
        record = ToolCallRecord(
            name=item.tool,
            arguments={"written": item.written},
            error=f"malformed call ({item.problem}): not run",
        )
        argument = tool_argument(self.tools[item.tool]).upper()
        message = (
            f"Not run: {item.written} {problem}. Write a call as {call_tag(item.tool, argument)}."
        )
        return _Answer(
            record=record, message=message, event=self._event(item.problem, item.tool, item.written)
        )

    def over_budget(self, call: TagCall, arguments: dict[str, object]) -> _Answer:
        """A call its budget has no room for: recorded as not run."""
        budget = self.budgets[call.tool]
        record = ToolCallRecord(name=call.tool, arguments=arguments, error=LIMIT_REACHED)
        message = (
            f"Not run: {call.written}: the {budget.limit} calls of {', '.join(budget.names)} "
            "for this question are used."
        )
        return _Answer(
            record=record,
            message=message,
            event=self._event("over_budget", call.tool, call.written),
        )

    def not_run(self, item: TagItem) -> _Answer:
        """A tag of the turn's last reply: malformed, or a call after the turn's end."""
        if isinstance(item, MalformedTag):
            return self.malformed(item)
        return self.over_budget(item, {tool_argument(self.tools[item.tool]): item.argument})

    async def answer(self, item: TagItem) -> _Answer:
        """Run one tag (or say why it does not run), spending its tool's budget."""
        if isinstance(item, MalformedTag):
            return self.malformed(item)
        tool = self.tools[item.tool]
        arguments: dict[str, object] = {tool_argument(tool): item.argument}
        budget = self.budgets[item.tool]
        if budget.left <= 0:
            return self.over_budget(item, arguments)
        budget.used += 1
        check = self.checks.get(item.tool)
        problem = check(item.argument) if check is not None else None
        event = self._event("invalid_argument", item.tool, item.written) if problem else None
        record = await execute_tool(tool, dict(arguments), self.config)
        result = record.result if record.error is None else f"Error: {record.error}"
        return _Answer(record=record, message=f"Result of {item.written}:\n{result}", event=event)

    def keep(self, answers: Sequence[_Answer]) -> None:
        """Record the answers' calls and events on the turn."""
        for answer in answers:
            self.records.append(answer.record)
            if answer.event is not None:
                self.events.append(answer.event)

    def status(self, last: bool) -> str:
        """The closing line of a results message: the calls left, or that none are."""
        if last:
            return (
                "No calls are left for this question: write your final response now "
                "(calls in it are not run)."
            )
        groups = {id(b): b for b in self.budgets.values()}.values()
        left = "; ".join(f"{', '.join(b.names)}: {max(b.left, 0)}" for b in groups)
        return (
            f"Calls left: {left}. Write more calls if you need them, or your final response "
            "without any call."
        )


async def run_text_turn(
    model: BaseChatModel,
    turn: AgentTurnInput,
    config: RunnableConfig | None = None,
    first_reply: PresampledReply | None = None,
    checks: Mapping[str, ArgumentCheck] | None = None,
) -> Step:
    """Run one agent under the ``text`` tool protocol (see the module doc). `checks` maps tool
    names to their argument checks; `first_reply` stands in for the first model call. Model and
    HTTP errors propagate to the caller."""
    state = _TextTurn(turn, checks or {}, config or {})
    meter = UsageMeter()
    messages = opening_messages(turn)
    names = list(state.tools)
    max_rounds = turn.max_tool_calls + turn.max_skill_loads
    rounds = 0
    reply = (
        meter.take(first_reply)
        if first_reply is not None
        else await meter.call(model, messages, config)
    )
    while True:
        items = parse_tag_calls(reply.text, names)
        if not items:
            break
        if rounds >= max_rounds or state.spent:
            # The turn is over: what the last reply calls is recorded, not run.
            state.keep([state.not_run(item) for item in items])
            break
        rounds += 1
        answers = [await state.answer(item) for item in items]
        state.keep(answers)
        last = rounds >= max_rounds or state.spent
        results = "\n\n".join([*(a.message for a in answers), state.status(last)])
        messages.append(AIMessage(content=reply.text))
        messages.append(HumanMessage(content=results))
        reply = await meter.call(model, messages, config)
    return turn.step(reply.text, state.records, meter.usage, state.events)
