"""Turning what a `create_agent` agent does into the project's `Step` records.

A `StepLog` collects one draft per agent invocation (opened by the middleware's `before_agent`,
filled by its model and tool wrappers, closed by `after_agent`) and hands back the finished
steps in start order. A `TeamRun` is one rollout of a graph team: the libraries and model the
agents must use, and the log their middleware writes to. The team adapter puts it in the run
config under `TEAM_RUN_KEY`; every agent invoked inside the graph inherits that config.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.config import get_config

from grse_graph.skills import SkillLibrary
from grse_graph.team.agent import usage_of
from grse_graph.team.rollout import Step, ToolCallRecord

TEAM_RUN_KEY = "grse_team_run"


def render_messages(messages: Sequence[BaseMessage]) -> str:
    """An agent's input as text: one message as it is, several each under its type."""
    shown = [m for m in messages if m.type != "system"]
    if len(shown) == 1:
        return shown[0].text
    return "\n\n".join(f"[{m.type}] {m.text}" for m in shown)


def final_text(messages: Sequence[BaseMessage]) -> str:
    """The text of the last AI message (an agent's output), or '' when there is none."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message.text.strip()
    return ""


class StepLog:
    """Agent invocations being recorded. Thread-safe: sync agents run in worker threads and
    tools may run in parallel. With `keep=False` (an agent used outside training) a closed step
    is returned and forgotten. An open invocation is the `Step` being filled in: its output
    comes with `close`."""

    def __init__(self, *, keep: bool = True) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._started = 0
        self._open: dict[str, Step] = {}
        self._done: list[Step] = []

    def open(self, agent: str, input_text: str, input_ref: str | None = None) -> str:
        """Start recording one invocation of `agent`; returns its id."""
        with self._lock:
            order = self._started
            self._started += 1
            invocation = f"{agent}#{order}"
            self._open[invocation] = Step(
                index=order,
                agent=agent,
                system_prompt="",
                input=input_text,
                input_ref=input_ref,
                output="",
            )
            return invocation

    def _draft(self, invocation: str) -> Step:
        draft = self._open.get(invocation)
        if draft is None:
            raise KeyError(f"no open agent invocation {invocation!r}")
        return draft

    def model_call(
        self,
        invocation: str,
        system_prompt: str,
        skills: Sequence[str],
        reply: AIMessage,
        latency_s: float,
    ) -> None:
        """Record one model call: the first call's prompt is the step's system prompt."""
        with self._lock:
            draft = self._draft(invocation)
            if draft.usage.model_calls == 0:
                draft.system_prompt = system_prompt
                draft.skills_present = list(skills)
            draft.usage += usage_of(reply, latency_s)

    def calls_of(self, invocation: str, tool: str) -> int:
        """How many calls of `tool` the invocation made so far."""
        with self._lock:
            return sum(1 for call in self._draft(invocation).tool_calls if call.name == tool)

    def tool_call(
        self, invocation: str, record: ToolCallRecord, skills: Sequence[str] = ()
    ) -> None:
        """Record one tool call; `skills` are the skills it loaded (a skill tool call that found
        its skill)."""
        with self._lock:
            draft = self._draft(invocation)
            draft.tool_calls.append(record)
            for skill in skills:
                if skill not in draft.skills_invoked:
                    draft.skills_invoked.append(skill)

    def close(self, invocation: str, output: str) -> Step:
        """Finish the invocation with the agent's output; returns its step."""
        with self._lock:
            step = self._draft(invocation)
            del self._open[invocation]
            step.output = output
            if self._keep:
                self._done.append(step)
            return step

    def steps(self) -> list[Step]:
        """The closed steps in start order, indexed 0..n-1."""
        with self._lock:
            ordered = sorted(self._done, key=lambda step: step.index)
        return [step.model_copy(update={"index": i}) for i, step in enumerate(ordered)]

    def unfinished(self) -> list[str]:
        """The agents of invocations opened but never closed."""
        with self._lock:
            return sorted({d.agent for d in self._open.values()})


class TeamRun:
    """One rollout of a graph team: what its agents must use and where they record."""

    def __init__(
        self,
        libraries: Mapping[str, SkillLibrary],
        *,
        model: BaseChatModel | None = None,
        task_input: str | None = None,
        input_ref: str | None = None,
    ) -> None:
        self.libraries = dict(libraries)
        self.model = model
        self.task_input = task_input
        self.input_ref = input_ref
        self.log = StepLog()

    def input_ref_for(self, input_text: str) -> str | None:
        """The shared-input reference when the agent's input contains the task input."""
        if self.task_input and self.input_ref and self.task_input in input_text:
            return self.input_ref
        return None


def current_team_run() -> TeamRun | None:
    """The `TeamRun` of the graph execution this code runs in, if a team adapter started it."""
    try:
        config = get_config()
    except RuntimeError:
        return None
    run = (config.get("configurable") or {}).get(TEAM_RUN_KEY)
    return run if isinstance(run, TeamRun) else None
