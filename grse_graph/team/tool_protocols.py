"""Tool protocols: how an agent's tool calls reach the environment.

- ``function`` (the default of `grse train`, `grse eval` and `grse demo`): OpenAI function
  calling; the tools are bound to the request and the engine's chat template parses the calls
  (`grse_graph.team.agent.run_agent_turn`). Agents of your own keep it.
- ``text`` (the paper's protocol, the default in paper mode): the agent writes
  ``<grep>pattern</grep>`` in its reply and the environment parses and runs the calls
  (`grse_graph.team.text_calls`, syntax in `grse_graph.team.tag_calls`). No tool is bound to
  the request, so the turn does not depend on how an engine's template parses tool calls.

An agent names its protocol (`AgentSpec.tool_protocol`), resolved in the team's registry
(`TeamSpec.tool_protocols`, `TOOL_PROTOCOLS` unless you pass one extended with
`TOOL_PROTOCOLS.with_protocol(mine)`). A protocol adds its instructions to the agent's system
prompt (`instructions`), runs the turn (`run`) and samples a group's shared first reply
(`sample_opening`). Both record every call as a `ToolCallRecord`, so the steps read the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from grse_graph.tasks.grep_tool import GREP_TOOL_NAME, pattern_problem

from .agent import AgentTurnInput, PresampledReply, run_agent_turn, sample_first_replies
from .named_registry import NamedRegistry
from .rollout import Step
from .text_calls import ArgumentCheck, run_text_turn, text_call_instructions

ToolProtocolName = Literal["function", "text"]
"""The built-in protocols' names (a registry of your own may hold more)."""

FUNCTION_PROTOCOL: ToolProtocolName = "function"
TEXT_PROTOCOL: ToolProtocolName = "text"


@runtime_checkable
class ToolProtocol(Protocol):
    """How one agent turn offers its tools, reads the agent's calls and returns the results."""

    @property
    def name(self) -> str:
        """The protocol's name in a registry (`AgentSpec.tool_protocol`)."""
        ...

    def instructions(self, turn: AgentTurnInput) -> str:
        """Text appended to the turn's system prompt (empty: none)."""
        ...

    async def run(
        self,
        model: BaseChatModel,
        turn: AgentTurnInput,
        config: RunnableConfig | None = None,
        first_reply: PresampledReply | None = None,
    ) -> Step:
        """Run the turn and record it as a `Step`."""
        ...

    async def sample_opening(
        self,
        model: BaseChatModel,
        turn: AgentTurnInput,
        n: int,
        config: RunnableConfig | None = None,
    ) -> list[PresampledReply]:
        """The turn's first reply for `n` rollouts from one call with `n` choices."""
        ...


@dataclass(frozen=True)
class FunctionCalling:
    """OpenAI function calling: tools bound to the request (`run_agent_turn`)."""

    name: str = FUNCTION_PROTOCOL

    def instructions(self, turn: AgentTurnInput) -> str:
        """None: the tools' schemas travel with the request."""
        return ""

    async def run(
        self,
        model: BaseChatModel,
        turn: AgentTurnInput,
        config: RunnableConfig | None = None,
        first_reply: PresampledReply | None = None,
    ) -> Step:
        """`run_agent_turn`."""
        return await run_agent_turn(model, turn, config, first_reply)

    async def sample_opening(
        self,
        model: BaseChatModel,
        turn: AgentTurnInput,
        n: int,
        config: RunnableConfig | None = None,
    ) -> list[PresampledReply]:
        """`sample_first_replies` with the turn's tools bound."""
        return await sample_first_replies(model, turn, n, config)


def _default_checks() -> dict[str, ArgumentCheck]:
    return {GREP_TOOL_NAME: pattern_problem}


def _default_examples() -> dict[str, str]:
    return {GREP_TOOL_NAME: "birthday|party"}


@dataclass(frozen=True)
class TextCalls:
    """Calls written as tags in the reply and run by the environment (`run_text_turn`).
    `checks` maps tool names to argument checks whose failures are counted (grep: a pattern
    that is not a valid regular expression); `examples` to the argument of the instructions'
    example call (grep: the example of its own argument's description)."""

    name: str = TEXT_PROTOCOL
    checks: Mapping[str, ArgumentCheck] = field(default_factory=_default_checks)
    examples: Mapping[str, str] = field(default_factory=_default_examples)

    def instructions(self, turn: AgentTurnInput) -> str:
        """The tag of each offered tool, its description and its budget."""
        return text_call_instructions(turn, self.examples)

    async def run(
        self,
        model: BaseChatModel,
        turn: AgentTurnInput,
        config: RunnableConfig | None = None,
        first_reply: PresampledReply | None = None,
    ) -> Step:
        """`run_text_turn` with this protocol's checks."""
        return await run_text_turn(model, turn, config, first_reply, self.checks)

    async def sample_opening(
        self,
        model: BaseChatModel,
        turn: AgentTurnInput,
        n: int,
        config: RunnableConfig | None = None,
    ) -> list[PresampledReply]:
        """`sample_first_replies` with no tool bound (calls are text)."""
        return await sample_first_replies(model, turn, n, config, with_tools=False)


class ToolProtocolRegistry(NamedRegistry[ToolProtocol]):
    """An immutable name -> tool protocol mapping; `with_protocol` returns an extended copy."""

    kind = "tool protocol"
    entry_type = ToolProtocol
    needs = "needs `name`, `instructions(turn)`, `run(model, turn, ...)` and `sample_opening(...)`"

    def with_protocol(self, protocol: ToolProtocol) -> ToolProtocolRegistry:
        """A registry with `protocol` added (a name already registered is an error)."""
        return ToolProtocolRegistry(self._extended(protocol))


TOOL_PROTOCOLS = ToolProtocolRegistry([FunctionCalling(), TextCalls()])
"""The built-in tool protocols: ``function`` and ``text``."""


def with_instructions(turn: AgentTurnInput, protocol: ToolProtocol) -> AgentTurnInput:
    """`turn` with `protocol`'s instructions appended to its system prompt (unchanged when the
    protocol has none for it)."""
    note = protocol.instructions(turn)
    if not note:
        return turn
    return turn.model_copy(update={"system_prompt": f"{turn.system_prompt}\n\n{note}"})
