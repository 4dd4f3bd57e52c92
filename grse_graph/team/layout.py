"""How an agent's opening messages are laid out: the paper's role-first layout, or the shared
task input first.

``role_first`` (the paper's, the default): the system message is the agent's role prompt with its
skills, the user message the task input followed by earlier agents' responses. Two agents of a
team share no prompt prefix, so an engine computes the task input once per agent.

``input_first``: the system message is the task input alone, the user message the role prompt
with its skills followed by earlier agents' responses. Every agent and every rollout of a
question then starts with the same tokens, which an engine with a prefix cache computes once
(`benchmarks/iteration.py --profiles default,input-first` measures what that saves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

PromptLayout = Literal["role_first", "input_first"]

LayoutFunction = Callable[[str, str, str | None], list[BaseMessage]]
"""(system prompt with skills, user input, shared task input or None) -> opening messages."""


def role_first(system_prompt: str, user_input: str, shared_input: str | None) -> list[BaseMessage]:
    """The role prompt as system message, the task input and hand-offs as user message."""
    return [SystemMessage(content=system_prompt), HumanMessage(content=user_input)]


def input_first(system_prompt: str, user_input: str, shared_input: str | None) -> list[BaseMessage]:
    """The shared task input as system message, then the role prompt and the rest of the user
    input; an input without the shared part (a main agent's request) keeps the role layout."""
    if not shared_input or not user_input.startswith(shared_input):
        return role_first(system_prompt, user_input, shared_input)
    rest = user_input[len(shared_input) :].lstrip("\n")
    user = f"{system_prompt}\n\n{rest}" if rest else system_prompt
    return [SystemMessage(content=shared_input), HumanMessage(content=user)]


PROMPT_LAYOUTS: dict[str, LayoutFunction] = {
    "role_first": role_first,
    "input_first": input_first,
}
