"""`SkillLibraryMiddleware`: a skill library for any LangChain `create_agent` agent.

    agent = create_agent(model, tools, system_prompt=ROLE,
                         middleware=[SkillLibraryMiddleware(library, mode="tool")])

The middleware renders the library under the agent's own system prompt on every model call, in
the same modes the trainer uses (`inline`, `tool` with `load_skill`) or the path-based disclosure
of a shipped pack (`path`: `/skills/<name>/SKILL.md` read with `read_file`), all from
`grse_graph.team.disclosure`. It records what the agent did: skill loads on `recorder` (and the
skills loaded by one invocation in the agent's `grse_skills_used` state key), and, inside a
rollout started by the team adapter (`graph_team`), every invocation as one `Step` with its
system prompt, input, tool calls, skills and token usage. Inside such a rollout the rollout's
libraries replace `library` (that is how training evolves them) and, when the adapter says so,
the rollout's actor model replaces the agent's model.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    OmitFromInput,
    PrivateStateAttr,
)
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from grse_graph.errors import ConfigError
from grse_graph.skills import SKILL_TOOL_NAME, SkillLibrary, SkillUseRecorder, make_skill_tool
from grse_graph.team.agent import replayable
from grse_graph.team.disclosure import PATH_TOOL_NAME, disclose, make_path_tool
from grse_graph.team.kinds import SkillMode
from grse_graph.team.rollout import ToolCallRecord

from .recording import StepLog, TeamRun, current_team_run, final_text, render_messages

INVOCATION_KEY = "grse_invocation"
SKILLS_USED_KEY = "grse_skills_used"


class SkillsAgentState(AgentState[Any]):
    """The agent state with the middleware's keys: the recorded invocation (private) and the
    skills the last invocation loaded (output only)."""

    grse_invocation: NotRequired[Annotated[str, PrivateStateAttr]]
    grse_skills_used: NotRequired[Annotated[list[str], OmitFromInput]]


def _skill_tool_name(mode: SkillMode) -> str | None:
    return {"tool": SKILL_TOOL_NAME, "path": PATH_TOOL_NAME}.get(mode)


def _invocation(state: Mapping[str, Any] | None) -> str | None:
    """The id of the invocation being recorded, from the agent state."""
    value = (state or {}).get(INVOCATION_KEY)
    return value if isinstance(value, str) else None


def _registered_tools(mode: SkillMode, library: SkillLibrary) -> list[BaseTool]:
    """The skill tool registered with the agent in tool and path modes, also for an empty
    library (training may add skills to it): its calls never reach it, `wrap_tool_call`
    answers them from the library of the invocation."""
    if mode == "tool":
        return [make_skill_tool(library, SkillUseRecorder())]
    if mode == "path":
        return [make_path_tool(library, SkillUseRecorder())]
    return []


class SkillLibraryMiddleware(AgentMiddleware[SkillsAgentState, Any]):
    """Gives one `create_agent` agent its skill library and records what it does with it.

    `agent` names the agent in records and in a team (default: the library's agent);
    `recorder` collects skill loads made outside a team rollout (one is created if not given).
    """

    state_schema = SkillsAgentState

    def __init__(
        self,
        library: SkillLibrary,
        *,
        mode: SkillMode = "inline",
        agent: str | None = None,
        recorder: SkillUseRecorder | None = None,
    ) -> None:
        super().__init__()
        # Rendering an empty prompt validates the mode once, at construction.
        disclose(mode, "", library)
        self.library = library
        self.mode: SkillMode = mode
        self.agent = agent or library.agent
        self.recorder = recorder if recorder is not None else SkillUseRecorder()
        self._log = StepLog(keep=False)
        # The skill tool is registered so the agent has a tool node; its calls are answered by
        # `wrap_tool_call` from the library in force for the invocation (see `_library`).
        self.tools: list[BaseTool] = _registered_tools(mode, library)

    @property
    def name(self) -> str:
        return f"SkillLibraryMiddleware[{self.agent}]"

    # ----- where this invocation records, and with which library ---------------------------

    def _library(self, run: TeamRun | None) -> SkillLibrary:
        if run is None:
            return self.library
        library = run.libraries.get(self.agent)
        if library is None:
            raise ConfigError(
                f"the team rollout has no library for agent {self.agent!r} "
                f"(agents: {', '.join(sorted(run.libraries))})"
            )
        return library

    def _log_for(self, run: TeamRun | None) -> StepLog:
        return run.log if run is not None else self._log

    # ----- before / after the agent ---------------------------------------------------------

    def before_agent(self, state: SkillsAgentState, runtime: Any) -> dict[str, Any] | None:
        run = current_team_run()
        text = render_messages(state["messages"])
        ref = run.input_ref_for(text) if run is not None else None
        return {INVOCATION_KEY: self._log_for(run).open(self.agent, text, ref)}

    async def abefore_agent(self, state: SkillsAgentState, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def after_agent(self, state: SkillsAgentState, runtime: Any) -> dict[str, Any] | None:
        invocation = _invocation(state)
        if invocation is None:
            return None
        step = self._log_for(current_team_run()).close(invocation, final_text(state["messages"]))
        return {SKILLS_USED_KEY: list(step.skills_invoked)}

    async def aafter_agent(self, state: SkillsAgentState, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # ----- model calls ----------------------------------------------------------------------

    def _prepare(self, request: ModelRequest) -> tuple[ModelRequest, TeamRun | None]:
        run = current_team_run()
        library = self._library(run)
        disclosure = disclose(self.mode, request.system_prompt or "", library)
        invocation = _invocation(request.state)
        tool_name = _skill_tool_name(self.mode)
        tools = [t for t in request.tools if not (isinstance(t, BaseTool) and t.name == tool_name)]
        # The trainer's budget: as many loads per invocation as the library has skill files, so
        # a small model cannot loop on the skill tool.
        spent = (
            invocation is not None
            and tool_name is not None
            and self._log_for(run).calls_of(invocation, tool_name) >= disclosure.max_loads
        )
        if disclosure.tool is not None and not spent:
            tools.append(disclosure.tool)
        prompt = disclosure.system_prompt.strip()
        overrides: dict[str, Any] = {
            "system_message": SystemMessage(content=prompt) if prompt else None,
            "tools": tools,
            "messages": [
                replayable(m) if isinstance(m, AIMessage) else m for m in request.messages
            ],
        }
        if run is not None and run.model is not None:
            overrides["model"] = run.model
        return request.override(**overrides), run

    def _record_model_call(
        self, request: ModelRequest, run: TeamRun | None, response: Any, latency_s: float
    ) -> None:
        invocation = _invocation(request.state)
        messages = response.result if isinstance(response, ModelResponse) else [response]
        reply = next((m for m in messages if isinstance(m, AIMessage)), None)
        if invocation is None or reply is None:
            return
        library = self._library(run)
        self._log_for(run).model_call(
            invocation, request.system_prompt or "", library.names(), reply, latency_s
        )

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> Any:
        prepared, run = self._prepare(request)
        started = time.perf_counter()
        response = handler(prepared)
        self._record_model_call(prepared, run, response, time.perf_counter() - started)
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        prepared, run = self._prepare(request)
        started = time.perf_counter()
        response = await handler(prepared)
        self._record_model_call(prepared, run, response, time.perf_counter() - started)
        return response

    # ----- tool calls -----------------------------------------------------------------------

    def _load_skill(self, request: ToolCallRequest, run: TeamRun | None) -> ToolMessage:
        call = request.tool_call
        args = dict(call.get("args") or {})
        disclosure = disclose(self.mode, "", self._library(run))
        if disclosure.tool is None or disclosure.recorder is None:
            content = "You have no skills."
            used: list[str] = []
        else:
            try:
                content = str(disclosure.tool.invoke(args))
            except Exception as error:  # bad arguments: the agent sees the error, as with tools
                content = f"Error: {type(error).__name__}: {error}"
            used = disclosure.recorder.skills_used()
        self._record_tool(
            request, run, ToolCallRecord(name=call["name"], arguments=args, result=content), used
        )
        if run is None:
            for skill in used:
                self.recorder.record(self.agent, skill, found=True)
        return ToolMessage(content=content, tool_call_id=call.get("id") or "", name=call["name"])

    def _record_tool(
        self,
        request: ToolCallRequest,
        run: TeamRun | None,
        record: ToolCallRecord,
        skills: Sequence[str] = (),
    ) -> None:
        invocation = _invocation(request.state)
        if invocation is None:
            return
        self._log_for(run).tool_call(invocation, record, skills)

    def _after_tool(
        self, request: ToolCallRequest, run: TeamRun | None, result: ToolMessage | Command
    ) -> None:
        call = request.tool_call
        args = dict(call.get("args") or {})
        if isinstance(result, ToolMessage):
            text = result.text
            failed = result.status == "error"
            record = ToolCallRecord(
                name=call["name"],
                arguments=args,
                result="" if failed else text,
                error=text if failed else None,
            )
        else:
            record = ToolCallRecord(name=call["name"], arguments=args, result=repr(result))
        self._record_tool(request, run, record)

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command]
    ) -> ToolMessage | Command:
        run = current_team_run()
        if request.tool_call["name"] == _skill_tool_name(self.mode):
            return self._load_skill(request, run)
        result = handler(request)
        self._after_tool(request, run, result)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
    ) -> ToolMessage | Command:
        run = current_team_run()
        if request.tool_call["name"] == _skill_tool_name(self.mode):
            return self._load_skill(request, run)
        result = await handler(request)
        self._after_tool(request, run, result)
        return result
