"""The two graphs `langgraph dev` / LangGraph Studio serve (`langgraph.json`): `team`, `training`.

Each assistant is configured through its **context** (LangGraph's `context_schema`), never
through the server's environment: the task and its data, the model endpoint of every role, the
skill libraries (a trained pack, or one folder per agent), the skill mode, and for training the
method settings (any `TrainConfig` field: iterations, group size, method section ...) and
whether each proposed skill edit is reviewed. Example context of a `training` assistant::

    {"task": "demo",
     "actor": {"base_url": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen2.5-7B-Instruct"},
     "critic": {"base_url": "http://127.0.0.1:8000/v1"},
     "optimizer": {"base_url": "http://127.0.0.1:8000/v1"},
     "train": {"iterations": 1, "batch_size": 2, "method": {"name": "grse", "group_size": 2}},
     "review": true}

A graph server cannot start the embedded engine, so every role used needs a `base_url` (for
example the URL `grse serve local` prints). Both graphs are compiled without a checkpointer (the
server adds its own); their state holds JSON values only. `team` takes a chat-shaped input (the
question as the last user message, or `question_id`) and needs no gold answer: the question is
looked up in the task, whose own scorer gives the reward. `training` writes one run folder per
thread (`runs_dir/<thread id>`), streams its progress events on LangGraph's `custom` stream
mode, and with `review` stops at each proposed skill edit as an interrupt that Studio shows
(resume with `accept`, `reject` or `{"verdict": "edit", "body": ...}`). Run-folder and library
I/O happens in worker threads, off the server's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config, get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from grse_graph.errors import ConfigError, TaskError
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import LLMConfig, load_config
from grse_graph.llm.provider import ROLES, RoleName, SamplingSettings
from grse_graph.llm.roles import ModelRoles
from grse_graph.skills import SkillLibrary, import_pack
from grse_graph.tasks import load_task
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team import SkillMode, TeamSpec, default_team, run_rollout
from grse_graph.training.config import TrainConfig, protocol_train_config
from grse_graph.training.context import TrainingDeps
from grse_graph.training.graph import compile_training_graph
from grse_graph.training.run_folder import RunFolder

DEFAULT_RUNS_DIR = "runs/studio"

CONTEXT_SETTINGS = ("task", "data", "category", "review", "skill_mode", "topology")
"""`TrainConfig` fields a training context gives at its top level (over its `train` table)."""


# -- context ---------------------------------------------------------------------------------


class Endpoint(TypedDict, total=False):
    """One role's OpenAI-compatible endpoint (fields of `RoleSettings`)."""

    base_url: str
    model: str
    api_key_env: str
    max_tokens: int
    temperature: float
    structured_method: str


class TeamContext(TypedDict, total=False):
    """What a `team` assistant runs: task, libraries, actor endpoint."""

    task: str
    data: str
    category: str
    pack: str
    libraries: dict[str, str]
    skill_mode: str
    topology: str
    actor: Endpoint


class TrainingContext(TeamContext, total=False):
    """What a `training` assistant runs: the team's settings plus the critic and optimizer
    endpoints, the `TrainConfig` fields under `train`, `review` and where run folders go."""

    critic: Endpoint
    optimizer: Endpoint
    train: dict[str, Any]
    review: bool
    runs_dir: str


def llm_config(context: Mapping[str, Any], roles: tuple[RoleName, ...]) -> LLMConfig:
    """The model roles of a context; each role in `roles` must name a remote endpoint."""
    overrides: dict[str, object] = {}
    for role in ROLES:
        for field, value in (context.get(role) or {}).items():
            overrides[f"{role}.{field}"] = value
    config = load_config(env={}, overrides=overrides)
    for role in roles:
        if config.role(role).embedded:
            raise ConfigError(
                f"context.{role}.base_url is not set: a graph server cannot start the embedded "
                "engine; point the role at an OpenAI-compatible endpoint (`grse serve local`)"
            )
    return config


def _libraries(context: Mapping[str, Any]) -> dict[str, SkillLibrary]:
    if context.get("pack") and context.get("libraries"):
        raise ConfigError("context: give the libraries as `pack` or as `libraries`, not both")
    if context.get("pack"):
        return dict(import_pack(Path(context["pack"])))
    return {
        agent: SkillLibrary.load(Path(folder), agent=agent)
        for agent, folder in (context.get("libraries") or {}).items()
    }


def _load_team(context: Mapping[str, Any]) -> tuple[Task, TeamSpec]:
    """Task and team of a context (blocking: reads data and library folders)."""
    task: Task = load_task(
        context.get("task", "demo"), context.get("data"), category=context.get("category")
    )
    mode: SkillMode = context.get("skill_mode", "inline")
    team = default_team(
        task,
        _libraries(context),
        skill_mode=mode,
        topology=context.get("topology", "sequential"),
        tool_protocol=context.get("tool_protocol", "function"),
    )
    return task, team


# -- the team graph ---------------------------------------------------------------------------


class TeamInput(TypedDict):
    """Chat-shaped input: the question as the last user message (text of one of the task's
    questions), or its `question_id`."""

    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    question_id: NotRequired[str]


class TeamOutput(TypedDict):
    """The answer (also as the last message), each agent's step, the task's score."""

    messages: Annotated[list[AnyMessage], add_messages]
    question_id: str
    answer: str
    steps: list[dict[str, Any]]
    reward: float
    metrics: dict[str, float]
    trace_id: str | None


class TeamStudioState(TeamOutput, total=False):
    """Input and output together (JSON values only): the input's keys are among the output's.
    The graph starts from the input alone, so the node reads the state with `get`."""


def _text(message: Any) -> str:
    content = message.content if hasattr(message, "content") else message.get("content", "")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def find_question(task: Task, state: Mapping[str, Any]) -> TaskQuestion:
    """The task question a `team` input asks: by `question_id`, else by the text of the last
    user message (which must be one of the task's questions: its passages or conversation and
    its scorer come from the task)."""
    questions = [q for split in task.splits().values() for q in split]
    wanted = state.get("question_id")
    if wanted:
        found = next((q for q in questions if q.id == wanted), None)
        if found is None:
            raise TaskError(f"task {task.name} has no question {wanted!r}")
        return found
    users = [m for m in state.get("messages") or [] if getattr(m, "type", None) == "human"]
    if not users:
        raise TaskError("input: send the question as a user message, or give question_id")
    text = _text(users[-1]).strip()
    found = next((q for q in questions if q.question.strip() == text), None)
    if found is None:
        raise TaskError(
            f"{text[:80]!r} is not a question of task {task.name}: paste one of its questions "
            "or give its question_id"
        )
    return found


async def team_node(state: TeamStudioState, runtime: Runtime[TeamContext]) -> dict[str, Any]:
    """One greedy execution of the team on the asked question, nested in the server's trace."""
    config = get_config()
    context: Mapping[str, Any] = runtime.context or {}
    llm = llm_config(context, ("actor",))
    task, team = await asyncio.to_thread(_load_team, context)
    question = find_question(task, state)
    writer = get_stream_writer()
    writer({"event": "question", "question_id": question.id, "agents": team.agent_names})
    with ModelRoles(llm, UsageLedger()) as roles:
        rollout = await run_rollout(
            team,
            task,
            question,
            roles,
            sampling=SamplingSettings.greedy(),
            rollout_id=f"studio:{question.id}",
            metadata={"method": "team", "source": "studio"},
            parent=config,
        )
    for step in rollout.steps:
        writer({"event": "step", "agent": step.agent, "output": step.output})
    return {
        "messages": [AIMessage(content=rollout.answer)],
        "question_id": question.id,
        "answer": rollout.answer,
        "steps": [step.model_dump(mode="json") for step in rollout.steps],
        "reward": rollout.reward,
        "metrics": rollout.metrics,
        "trace_id": rollout.trace_id,
    }


def _one_node_graph(
    name: str,
    node_name: str,
    node: Any,
    state: type[Any],
    input_schema: type[Any],
    output_schema: type[Any],
    context_schema: type[Any],
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A graph of `node` alone between START and END, compiled without a checkpointer (the
    server adds its own)."""
    builder = StateGraph(
        state,
        input_schema=input_schema,
        output_schema=output_schema,
        context_schema=context_schema,
    )
    builder.add_node(node_name, node)
    builder.add_edge(START, node_name)
    builder.add_edge(node_name, END)
    return builder.compile(name=name)


def build_team_studio_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The `team` graph of `langgraph.json`."""
    return _one_node_graph(
        "team", "team", team_node, TeamStudioState, TeamInput, TeamOutput, TeamContext
    )


# -- the training graph -----------------------------------------------------------------------


class TrainingInput(TypedDict):
    """Nothing is required: the assistant's context holds the configuration. `iterations`
    overrides `train.iterations` for this thread."""

    iterations: NotRequired[int]


class TrainingOutput(TypedDict):
    """Where the run folder is and what the run decided."""

    run_dir: str
    iterations_done: int
    gates: list[dict[str, Any]]
    final_skills: dict[str, list[str]]
    report: str


class TrainingStudioState(TrainingInput, TrainingOutput, total=False):
    """Input and output together (JSON values only)."""


def train_config(context: Mapping[str, Any], state: Mapping[str, Any]) -> TrainConfig:
    """The `TrainConfig` of a context (its `train` table plus task, data, category, review),
    over the task's protocol values with the context actor's training top-k
    (`protocol_train_config`, as every entry point builds a new run's config)."""

    values: dict[str, Any] = {**(context.get("train") or {})}
    for key in CONTEXT_SETTINGS:
        if key in context:
            values[key] = context[key]
    values.setdefault("task", "demo")
    if state.get("iterations"):
        values["iterations"] = state["iterations"]

    def removal(setting: str) -> str:
        # A refused setting is where the context gave it: at its top level or in `train`.
        where = "context" if setting in CONTEXT_SETTINGS and setting in context else "context.train"
        return f"remove {where}.{setting}"

    top_k = llm_config(context, ()).training_top_k()
    return protocol_train_config(values, "context.train", training_top_k=top_k, removal=removal)


def _thread_id(config: RunnableConfig) -> str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if not thread:
        raise ConfigError("the training graph runs in a thread (one run folder per thread)")
    return str(thread)


def _outcome(run_dir: Path) -> dict[str, Any]:
    """The output of a finished run, read from its run folder (blocking)."""
    run = RunFolder(run_dir)
    gates = run.gate.read()
    return {
        "run_dir": str(run_dir),
        "iterations_done": len(gates),
        "gates": [gate.model_dump(mode="json") for gate in gates],
        "final_skills": dict(gates[-1].skills_after) if gates else {},
        "report": str(run.report_path),
    }


async def training_node(
    state: TrainingStudioState, runtime: Runtime[TrainingContext]
) -> dict[str, Any]:
    """Run (or, after an interrupt or a restart, continue) the thread's training run.

    The loop runs as a subgraph of this node, so its checkpoints are the server's and a review
    interrupt inside it is this run's interrupt; its progress events go to the custom stream.
    """
    config = get_config()
    context: Mapping[str, Any] = runtime.context or {}
    cfg = train_config(context, state)
    llm = llm_config(context, ROLES)
    run_dir = Path(context.get("runs_dir", DEFAULT_RUNS_DIR)) / _thread_id(config)
    task, team = await asyncio.to_thread(_load_team, {**context, "task": cfg.task})
    # A pack or library folders in the context are where the run starts (else the `train`
    # table's init_libraries, else empty libraries).
    given = bool(context.get("pack") or context.get("libraries"))
    libraries = {agent.name: agent.library for agent in team.agents} if given else None
    writer = get_stream_writer()
    ledger = UsageLedger()
    with ModelRoles(llm, ledger) as roles:
        deps = TrainingDeps(
            task=task,
            provider=roles,
            config=cfg,
            run=RunFolder(run_dir),
            team=team,
            initial_libraries=libraries,
            on_progress=lambda event: writer({"progress": event.model_dump(mode="json")}),
            usage=lambda: ledger.report().model_dump(mode="json"),
        )
        # Compiled with the run's recursion limit and concurrency bound (the thread: ours).
        graph = await asyncio.to_thread(compile_training_graph, deps)
        await graph.ainvoke({})
    return await asyncio.to_thread(_outcome, run_dir)


def build_training_studio_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The `training` graph of `langgraph.json`."""
    return _one_node_graph(
        "training",
        "train",
        training_node,
        TrainingStudioState,
        TrainingInput,
        TrainingOutput,
        TrainingContext,
    )
