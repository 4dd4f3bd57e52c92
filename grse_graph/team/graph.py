"""Compile a `TeamSpec` into a LangGraph graph whose nodes are the agents of the team."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.skills import SkillUseRecorder, make_skill_tool, render_index, render_inline
from grse_graph.tasks.base import Task, TaskQuestion

from .agent import SKILL_TOOL_NAME, AgentTurnInput, run_agent_turn
from .answer import extract_answer
from .rollout import Step
from .spec import AgentSpec, QuestionKind, TeamSpec
from .state import TeamState
from .topology import AgentNode, AgentNodeFactory, topology_builder


def input_ref(question: TaskQuestion) -> str:
    """The reference naming a question's shared task input inside rollout steps."""
    return f"question:{question.id}:input"


def question_kind(task: Task, question: TaskQuestion, first_agent: AgentSpec) -> QuestionKind:
    """Passages or conversation. Mixed tasks decide per question: a question whose first agent
    receives tools from the task is a conversation question."""
    if task.kind == "mixed":
        return "conversation" if task.agent_tools(question, first_agent.name, 0) else "passages"
    return task.kind


def compose_input(task_input: str, previous: Sequence[Step], agent: AgentSpec) -> str:
    """The user message of an agent: the task input, then each earlier agent's response
    (preceded by its task-tool results when `agent.sees_tool_results`)."""
    parts = [task_input]
    for step in previous:
        if agent.sees_tool_results:
            results = [
                f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())}):\n"
                + (call.result if call.error is None else f"Error: {call.error}")
                for call in step.tool_calls
                if call.name != SKILL_TOOL_NAME
            ]
            if results:
                parts.append(f"## Tool results of {step.agent}\n" + "\n\n".join(results))
        parts.append(f"## Response of {step.agent}\n{step.output}")
    return "\n\n".join(parts)


def _agent_tools(
    task: Task, question: TaskQuestion, agent: AgentSpec, position: int
) -> tuple[BaseTool, ...]:
    if agent.max_tool_calls == 0:
        return ()
    tools = task.agent_tools(question, agent.name, position)
    if agent.tools is not None:
        allowed = set(agent.tools)
        tools = [t for t in tools if t.name in allowed]
    return tuple(tools)


def agent_turn_input(
    task: Task,
    question: TaskQuestion,
    agent: AgentSpec,
    position: int,
    kind: QuestionKind,
    previous: Sequence[Step],
) -> tuple[AgentTurnInput, SkillUseRecorder | None]:
    """One agent's turn on a question after the `previous` steps, and the recorder of its skill
    loads (tool mode with a non-empty library only)."""
    role = agent.role_for(kind)
    library = agent.library
    skill_names = tuple(library.names())
    recorder: SkillUseRecorder | None = None
    skill_tool = None
    if agent.skill_mode == "tool" and skill_names:
        recorder = SkillUseRecorder()
        skill_tool = make_skill_tool(library, recorder)
        system_prompt = render_index(role, library)
    else:
        system_prompt = render_inline(role, library)
    task_input = task.render_input(question)
    user_input = compose_input(task_input, previous, agent)
    turn = AgentTurnInput(
        index=len(previous),
        agent=agent.name,
        system_prompt=system_prompt,
        user_input=user_input,
        input_ref=input_ref(question) if task_input in user_input else None,
        task_tools=_agent_tools(task, question, agent, position),
        skill_tool=skill_tool,
        max_tool_calls=agent.max_tool_calls,
        max_skill_loads=len(skill_names) if skill_tool is not None else 0,
        force_first_tool=agent.force_first_tool,
        skills_present=skill_names,
    )
    return turn, recorder


def first_turn_input(spec: TeamSpec, task: Task, question: TaskQuestion) -> AgentTurnInput:
    """The first agent's turn on a question: the same for every rollout of a group."""
    first = spec.agents[0]
    kind = question_kind(task, question, first)
    return agent_turn_input(task, question, first, 0, kind, ())[0]


def _node_factory(
    spec: TeamSpec,
    task: Task,
    provider: ChatModelProvider,
    sampling: SamplingSettings,
    max_tokens: int | None,
) -> AgentNodeFactory:
    first = spec.agents[0]

    def make_node(agent: AgentSpec, position: int, *, final: bool) -> AgentNode:
        async def node(state: TeamState, config: RunnableConfig) -> dict[str, Any]:
            question = state.question
            kind = state.kind or question_kind(task, question, first)
            turn, recorder = agent_turn_input(task, question, agent, position, kind, state.steps)
            model = provider.chat("actor", sampling=sampling, max_tokens=max_tokens)
            opening = state.opening if not state.steps and agent.name == first.name else None
            step = await run_agent_turn(model, turn, config, first_reply=opening)
            if recorder is not None:
                # Inline skills cannot be attributed reliably from the text, so only tool-mode
                # loads count as invocations.
                step = step.model_copy(update={"skills_invoked": recorder.skills_used()})
            update: dict[str, Any] = {
                "kind": kind,
                "outputs": {agent.name: step.output},
                "steps": [step],
            }
            if final:
                update["answer"] = extract_answer(step.output)
            return update

        return node

    return make_node


def build_team_graph(
    spec: TeamSpec,
    task: Task,
    provider: ChatModelProvider,
    *,
    sampling: SamplingSettings,
    max_tokens: int | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled team graph (no checkpointer) for one task.

    Input: `{"question": TaskQuestion}` (a dict in TaskQuestion's shape is accepted; an
    optional `opening` presampled reply replaces the first agent's first model call). Output:
    the final `TeamState` values: per-agent `outputs`, recorded `steps` and the `answer`.
    Every agent calls the provider's "actor" role with `sampling`; `max_tokens` overrides the
    role's generation cap.
    """
    builder = topology_builder(spec.topology)
    graph = builder(spec, _node_factory(spec, task, provider, sampling, max_tokens))
    return graph.compile(name="team")
