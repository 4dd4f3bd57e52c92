"""Delegation through tools: a main agent asks its sub-agents (centralized and hybrid teams).

A sub-agent is reached through a tool `ask_<agent>` whose one argument is the request. Each call
runs the sub-agent in a fresh context: the full task input, then the request (and, in the hybrid
topology, every earlier request and response of the rollout). The main agent itself sees only
the question (MASkills §7.1).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field

from grse_graph.tasks.base import TaskQuestion

from .topology import Delegation

DelegateRunner = Callable[[str], Awaitable[str]]


class Exchange(BaseModel):
    """One delegation: which sub-agent was asked what, and what it answered."""

    model_config = ConfigDict(frozen=True)

    agent: str
    request: str
    response: str


class DelegateArgs(BaseModel):
    """Arguments of an `ask_<agent>` tool."""

    request: str = Field(
        description="What you need from this agent: a focused question or the evidence to find."
    )


def delegate_tool_name(agent: str) -> str:
    """The name of the tool that asks `agent` (tool names take no hyphens on every server)."""
    return f"ask_{agent.replace('-', '_')}"


def make_delegate_tool(agent: str, run: DelegateRunner) -> BaseTool:
    """The tool that asks the sub-agent `agent`; `run` executes one call and returns the text
    the main agent reads."""

    async def ask(request: str) -> str:
        return await run(request)

    return StructuredTool.from_function(
        coroutine=ask,
        name=delegate_tool_name(agent),
        description=(
            f"Ask the {agent} agent. It sees the full task input (and can use its own tools), "
            "works on your request and returns its response."
        ),
        args_schema=DelegateArgs,
    )


def main_agent_input(question: TaskQuestion) -> str:
    """The main agent's user message: the question only."""
    return f"Question: {question.question}"


def delegation_note(delegation: Delegation) -> str:
    """The paragraph appended to the main agent's system prompt."""
    tools = ", ".join(f"`{delegate_tool_name(a)}`" for a in delegation.sub_agents)
    return (
        "## Your team\n"
        "You see only the question. Your team members see the full input: ask them with "
        f"{tools} (at most {delegation.max_calls} requests in all), then give the final answer "
        "from what they report."
    )


def compose_request(
    task_input: str, main: str, request: str, earlier: Sequence[Exchange] = ()
) -> str:
    """A sub-agent's user message: the task input, the earlier exchanges (hybrid), the request."""
    parts = [task_input]
    for exchange in earlier:
        parts.append(
            f"## Earlier request of {main} to {exchange.agent}\n{exchange.request}\n\n"
            f"## Response of {exchange.agent}\n{exchange.response}"
        )
    parts.append(f"## Request of {main}\n{request}")
    return "\n\n".join(parts)
