"""Compile a `TeamSpec` into a LangGraph graph whose nodes are the agents of the team.

Node behaviour lives here and is the same for every topology: an agent turn is built from the
spec (`agent_turn_input`), run by its tool protocol and recorded as a `Step` with the skills it
loaded; a main agent's turn additionally carries one delegation tool per sub-agent, and every
delegated call is recorded as a step of that sub-agent before the main agent's own step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.skills import SkillUseRecorder
from grse_graph.tasks.base import Task, TaskQuestion

from .agent import AgentTurnInput, PresampledReply
from .answer import extract_answer
from .delegation import (
    DelegateRunner,
    Exchange,
    compose_request,
    delegation_note,
    main_agent_input,
    make_delegate_tool,
)
from .disclosure import SKILL_TOOL_NAMES, disclose
from .rollout import Step
from .spec import AgentSpec, QuestionKind, TeamSpec
from .state import TeamState
from .tool_protocols import TOOL_PROTOCOLS, ToolProtocol, ToolProtocolRegistry, with_instructions
from .topology import AgentNode, Delegation


def input_ref(question: TaskQuestion) -> str:
    """The reference naming a question's shared task input inside rollout steps."""
    return f"question:{question.id}:input"


def question_kind(task: Task, question: TaskQuestion, first_agent: AgentSpec) -> QuestionKind:
    """Passages or conversation. Mixed tasks decide per question: a question whose first agent
    receives tools from the task is a conversation question."""
    if task.kind == "mixed":
        return "conversation" if task.agent_tools(question, first_agent.name, 0) else "passages"
    return task.kind


def step_sections(step: Step, *, with_tool_results: bool) -> list[str]:
    """How another agent reads a step: its response, preceded by its task-tool results when
    `with_tool_results`."""
    sections: list[str] = []
    if with_tool_results:
        results = [
            f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())}):\n"
            + (call.result if call.error is None else f"Error: {call.error}")
            for call in step.tool_calls
            if call.name not in SKILL_TOOL_NAMES
        ]
        if results:
            sections.append(f"## Tool results of {step.agent}\n" + "\n\n".join(results))
    sections.append(f"## Response of {step.agent}\n{step.output}")
    return sections


def compose_input(task_input: str, previous: Sequence[Step], agent: AgentSpec) -> str:
    """The user message of an agent: the task input, then each earlier agent's response
    (preceded by its task-tool results when `agent.sees_tool_results`)."""
    parts = [task_input]
    for step in previous:
        parts.extend(step_sections(step, with_tool_results=agent.sees_tool_results))
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
    protocols: ToolProtocolRegistry | None = TOOL_PROTOCOLS,
) -> tuple[AgentTurnInput, SkillUseRecorder | None]:
    """One agent's turn on a question after the `previous` steps, and the recorder of its skill
    loads (tool and path modes with a non-empty library only). The system prompt ends with the
    instructions of the agent's tool protocol (resolved in `protocols`), if it has any; with
    `protocols` None it has none yet (`main_turn_input` adds them after its own changes)."""
    disclosure = disclose(agent.skill_mode, agent.role_for(kind), agent.library)
    task_input = task.render_input(question)
    user_input = compose_input(task_input, previous, agent)
    turn = AgentTurnInput(
        index=len(previous),
        agent=agent.name,
        system_prompt=disclosure.system_prompt,
        user_input=user_input,
        input_ref=input_ref(question) if task_input in user_input else None,
        task_tools=_agent_tools(task, question, agent, position),
        skill_tool=disclosure.tool,
        max_tool_calls=agent.max_tool_calls,
        max_skill_loads=disclosure.max_loads,
        force_first_tool=agent.force_first_tool,
        skills_present=tuple(agent.library.names()),
        prompt_layout=agent.prompt_layout,
        shared_input=task_input,
        skills_hash=agent.library.content_hash() if disclosure.tool is not None else None,
    )
    if protocols is None:
        return turn, disclosure.recorder
    return with_instructions(turn, protocols.resolve(agent.tool_protocol)), disclosure.recorder


def main_turn_input(
    task: Task,
    question: TaskQuestion,
    agent: AgentSpec,
    position: int,
    kind: QuestionKind,
    delegation: Delegation,
    delegates: Sequence[BaseTool],
    protocols: ToolProtocolRegistry = TOOL_PROTOCOLS,
) -> tuple[AgentTurnInput, SkillUseRecorder | None]:
    """A main agent's turn: the question only, its delegation tools first (sharing its tool
    budget with its own task tools), and the delegation note after its role and skills (then
    its tool protocol's instructions, which cover the delegation tools)."""
    turn, recorder = agent_turn_input(task, question, agent, position, kind, (), None)
    turn = turn.model_copy(
        update={
            "system_prompt": f"{turn.system_prompt}\n\n{delegation_note(delegation)}",
            "user_input": main_agent_input(question),
            "input_ref": None,
            "task_tools": (*delegates, *turn.task_tools),
            "max_tool_calls": turn.max_tool_calls + delegation.max_calls,
            "force_first_tool": delegation.force_first or turn.force_first_tool,
        }
    )
    return with_instructions(turn, protocols.resolve(agent.tool_protocol)), recorder


def _never_called(agent: str) -> DelegateRunner:
    async def run(request: str) -> str:
        raise RuntimeError(f"the opening turn cannot delegate to {agent}")

    return run


def first_turn_input(spec: TeamSpec, task: Task, question: TaskQuestion) -> AgentTurnInput | None:
    """The turn that opens every rollout of a question with the same prompt (the topology's
    `opening`), or None when the topology has none."""
    opening = spec.opening_turn()
    if opening is None:
        return None
    agent = spec.agent(opening.agent)
    position = spec.agent_names.index(agent.name)
    kind = question_kind(task, question, spec.agents[0])
    protocols = spec.tool_protocols
    if opening.delegation is None:
        return agent_turn_input(task, question, agent, position, kind, (), protocols)[0]
    # Only the tools' schemas reach the model here: the opening call is sampled, not executed.
    delegates = [make_delegate_tool(a, _never_called(a)) for a in opening.delegation.sub_agents]
    return main_turn_input(
        task, question, agent, position, kind, opening.delegation, delegates, protocols
    )[0]


def reusable_step(replay: Sequence[Step], turn: AgentTurnInput) -> Step | None:
    """The recorded step that a greedy turn would reproduce: same position, agent, system prompt
    and input (so the same skills and the same upstream outputs). Under greedy decoding the
    model's reply to an identical prompt is the recorded one, so the call is not made again.

    Where skills are loaded through a tool, their bodies are not in the system prompt: a step
    that loaded a skill is reused only from the same library (`skills_hash`), since a changed
    body would have been read back differently."""
    if turn.index >= len(replay):
        return None
    step = replay[turn.index]
    loaded = any(call.name in SKILL_TOOL_NAMES for call in step.tool_calls)
    same = (
        step.agent == turn.agent
        and step.system_prompt == turn.system_prompt
        and step.input == turn.user_input
        and (not loaded or step.skills_hash == turn.skills_hash)
    )
    return step.model_copy(update={"reused": True}) if same else None


async def run_recorded_turn(
    model: BaseChatModel,
    turn: AgentTurnInput,
    recorder: SkillUseRecorder | None,
    config: RunnableConfig,
    opening: PresampledReply | None,
    protocol: ToolProtocol,
) -> Step:
    """Run one agent turn by its tool `protocol` and record the skills it loaded."""
    step = await protocol.run(model, turn, config, opening)
    if recorder is None:
        return step
    # Inline skills cannot be attributed reliably from the text, so only tool-mode loads count
    # as invocations.
    return step.model_copy(update={"skills_invoked": recorder.skills_used()})


@dataclass(frozen=True)
class AgentNodes:
    """The node factory of one team graph: every agent turn calls the provider's "actor" role
    with the team graph's sampling and generation cap (`max_tokens`)."""

    spec: TeamSpec
    task: Task
    provider: ChatModelProvider
    sampling: SamplingSettings
    max_tokens: int | None

    @property
    def greedy(self) -> bool:
        """Whether the graph decodes greedily (only then may a recorded step be replayed)."""
        return self.sampling.temperature == 0.0

    def actor_model(self) -> BaseChatModel:
        """The model every agent turn of this graph calls."""
        return self.provider.chat("actor", sampling=self.sampling, max_tokens=self.max_tokens)

    def __call__(
        self, agent: AgentSpec, position: int, *, final: bool, delegation: Delegation | None = None
    ) -> AgentNode:
        spec, task = self.spec, self.task
        first = spec.agents[0]
        opening_turn = spec.opening_turn()
        opens = opening_turn is not None and agent.name == opening_turn.agent

        async def node(state: TeamState, config: RunnableConfig) -> dict[str, Any]:
            question = state.question
            kind = state.kind or question_kind(task, question, first)
            model = self.actor_model()
            fresh = opens and not state.steps
            opening = state.opening if fresh else None
            if delegation is None:
                turn, recorder = agent_turn_input(
                    task, question, agent, position, kind, state.steps, spec.tool_protocols
                )
                recorded = reusable_step(state.replay, turn) if self.greedy else None
                protocol = spec.tool_protocols.resolve(agent.tool_protocol)
                steps = [
                    recorded
                    if recorded is not None
                    else await run_recorded_turn(model, turn, recorder, config, opening, protocol)
                ]
            else:
                steps = await _delegating_turn(
                    spec,
                    task,
                    question,
                    kind,
                    (agent, position),
                    delegation,
                    model,
                    config,
                    opening,
                )
            first_index = len(state.steps)
            steps = [s.model_copy(update={"index": first_index + i}) for i, s in enumerate(steps)]
            update: dict[str, Any] = {
                "kind": kind,
                "outputs": {step.agent: step.output for step in steps},
                "steps": steps,
            }
            if final:
                update["answer"] = extract_answer(steps[-1].output)
            return update

        return node


async def _delegating_turn(
    spec: TeamSpec,
    task: Task,
    question: TaskQuestion,
    kind: QuestionKind,
    main: tuple[AgentSpec, int],
    delegation: Delegation,
    model: BaseChatModel,
    config: RunnableConfig,
    opening: PresampledReply | None,
) -> list[Step]:
    """The main agent's turn with its sub-agent calls: the sub-agents' steps in call order, then
    the main agent's step."""
    main_agent, main_position = main
    sub_steps: list[Step] = []
    exchanges: list[Exchange] = []

    def runner(name: str) -> DelegateRunner:
        sub = spec.agent(name)
        position = spec.agent_names.index(name)

        async def run(request: str) -> str:
            protocols = spec.tool_protocols
            turn, recorder = agent_turn_input(task, question, sub, position, kind, (), protocols)
            earlier = exchanges if delegation.history else ()
            user_input = compose_request(turn.user_input, main_agent.name, request, earlier)
            turn = turn.model_copy(update={"user_input": user_input})
            protocol = protocols.resolve(sub.tool_protocol)
            step = await run_recorded_turn(model, turn, recorder, config, None, protocol)
            sub_steps.append(step)
            exchanges.append(Exchange(agent=name, request=request, response=step.output))
            sections = step_sections(step, with_tool_results=main_agent.sees_tool_results)
            return "\n\n".join(sections)

        return run

    delegates = [make_delegate_tool(name, runner(name)) for name in delegation.sub_agents]
    protocols = spec.tool_protocols
    turn, recorder = main_turn_input(
        task, question, main_agent, main_position, kind, delegation, delegates, protocols
    )
    protocol = protocols.resolve(main_agent.tool_protocol)
    main_step = await run_recorded_turn(model, turn, recorder, config, opening, protocol)
    return [*sub_steps, main_step]


def build_team_graph(
    spec: TeamSpec,
    task: Task,
    provider: ChatModelProvider,
    *,
    sampling: SamplingSettings,
    max_tokens: int | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The compiled team graph (no checkpointer) for one task, wired by the team's topology.

    Input: `{"question": TaskQuestion}` (a dict in TaskQuestion's shape is accepted; an
    optional `opening` presampled reply replaces the first model call of the topology's opening
    turn). Output: the final `TeamState` values: per-agent `outputs`, recorded `steps` and the
    `answer`. Every agent calls the provider's "actor" role with `sampling`; `max_tokens`
    overrides the role's generation cap.
    """
    topology = spec.topologies.resolve(spec.topology)
    graph = topology.build(spec, AgentNodes(spec, task, provider, sampling, max_tokens))
    return graph.compile(name="team")
