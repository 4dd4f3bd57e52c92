"""The Studio graphs (`langgraph.json`): schemas, context, custom stream, review interrupt,
one run folder per thread, and no blocking I/O on the event loop (checked with the same
blocking-call guard `langgraph dev` runs), against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from grse_graph.errors import ConfigError, TaskError
from grse_graph.studio import build_team_studio_graph, build_training_studio_graph
from grse_graph.tasks import load_task
from tests.fakeserver import FakeOpenAIServer

ROLES = ("actor", "critic", "optimizer")


def _endpoints(server: FakeOpenAIServer) -> dict[str, Any]:
    return {role: {"base_url": server.base_url(role), "model": "fake"} for role in ROLES}


def _langgraph_dev_guard() -> Any:
    """The blocking-call guard `langgraph dev` activates (BlockBuster, same exemptions)."""
    from langgraph_runtime_inmem.queue import _enable_blockbuster

    return _enable_blockbuster()


def test_graph_modules_compile_without_a_checkpointer_and_publish_schemas() -> None:
    langgraph = json.loads(Path("langgraph.json").read_text())
    assert set(langgraph["graphs"]) == {"team", "training"}
    team, training = build_team_studio_graph(), build_training_studio_graph()
    assert team.checkpointer is None and training.checkpointer is None
    team_input = team.get_input_jsonschema()
    assert set(team_input["properties"]) == {"messages", "question_id"}
    assert "required" not in team_input or not team_input["required"]  # no gold answer
    assert {"answer", "steps", "reward", "trace_id"} <= set(
        team.get_output_jsonschema()["properties"]
    )
    context = training.get_context_jsonschema()["properties"]
    assert {"task", "data", "pack", "actor", "critic", "optimizer", "train", "review"} <= set(
        context
    )


def test_team_answers_a_chat_question_configured_by_context() -> None:
    task = load_task("demo")
    question = next(iter(task.split("test")))
    graph = build_team_studio_graph()
    events: list[Any] = []

    async def run() -> dict[str, Any]:
        result: dict[str, Any] = {}
        with FakeOpenAIServer() as server:
            context = {"task": "demo", "actor": _endpoints(server)["actor"]}
            guard = _langgraph_dev_guard()
            try:
                async for mode, chunk in graph.astream(
                    {"messages": [HumanMessage(question.question)]},
                    context=context,
                    stream_mode=["custom", "values"],
                ):
                    if mode == "custom":
                        events.append(chunk)
                    else:
                        result = chunk
            finally:
                guard.deactivate()
        return result

    out = asyncio.run(run())
    assert out["question_id"] == question.id
    assert out["messages"][-1].content == out["answer"]
    assert [s["agent"] for s in out["steps"]] == default_agents(task)
    assert out["trace_id"]
    assert events[0]["event"] == "question"
    assert [e["agent"] for e in events if e["event"] == "step"] == default_agents(task)


def default_agents(task: Any) -> list[str]:
    from grse_graph.team import default_team

    return default_team(task).agent_names


def test_team_refuses_a_question_the_task_does_not_have_and_an_embedded_actor() -> None:
    graph = build_team_studio_graph()
    with FakeOpenAIServer() as server:
        context = {"actor": _endpoints(server)["actor"]}
        with pytest.raises(TaskError, match="not a question of task demo"):
            asyncio.run(
                graph.ainvoke({"messages": [HumanMessage("who are you?")]}, context=context)
            )
    with pytest.raises(ConfigError, match="cannot start the embedded engine"):
        asyncio.run(graph.ainvoke({"question_id": "x"}, context={}))


TINY_TRAIN = {
    "iterations": 1,
    "batch_size": 1,
    "validation_size": 1,
    "concurrency": 1,
    "method": {"name": "grse", "group_size": 2},
}


def test_training_runs_one_folder_per_thread_streams_progress_and_stops_for_review(
    tmp_path: Path,
) -> None:
    graph = build_training_studio_graph()
    graph.checkpointer = InMemorySaver()  # what the server attaches

    async def run() -> tuple[list[Any], Any, dict[str, Any], int]:
        with FakeOpenAIServer() as server:
            context = {
                **_endpoints(server),
                "task": "demo",
                "train": TINY_TRAIN,
                "review": True,
                "runs_dir": str(tmp_path),
            }
            config = {"configurable": {"thread_id": "t1"}}
            progress: list[Any] = []
            outputs: list[dict[str, Any]] = []
            reviews = 0
            guard = _langgraph_dev_guard()
            try:
                payload: Any = {}
                while True:
                    async for mode, chunk in graph.astream(
                        payload, config, context=context, stream_mode=["custom", "values"]
                    ):
                        if mode == "custom":
                            progress.append(chunk["progress"])
                        else:
                            outputs.append(chunk)
                    snapshot = await graph.aget_state(config)
                    interrupts = [i for task in snapshot.tasks for i in task.interrupts]
                    if not interrupts:
                        break
                    assert {"agent", "skill", "change"} <= set(interrupts[0].value)
                    reviews += 1
                    payload = Command(resume="accept")
            finally:
                guard.deactivate()
        return progress, snapshot, outputs[-1], reviews

    progress, snapshot, out, reviews = asyncio.run(run())
    stages = {event["stage"] for event in progress}
    assert {"rollouts", "critic", "validation"} <= stages
    assert progress[-1]["kind"] == "run_done"
    assert not snapshot.next
    assert reviews >= 1  # the fake optimizer proposes a skill: review stopped for it
    assert out["run_dir"] == str(tmp_path / "t1") and out["iterations_done"] == 1
    assert (tmp_path / "t1" / "gate.jsonl").exists()
    assert set(out["final_skills"]) == set(default_agents(load_task("demo")))
