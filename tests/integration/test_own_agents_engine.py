"""Your own agents, trained: two `create_agent` agents in a user-written StateGraph through one
GRSE iteration, the agents on the embedded engine (small model, tiny sizes; slow, `-m engine`).
The critic and the optimizer are the scripted server: the small model cannot fill GRSE's
critique within any cap a test can afford (measured at 160, 400 and 800 tokens), and this test
is about your agents' part of the loop, which must then carry a parsed critique to the gate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from grse_graph.integrations import SkillLibraryMiddleware, graph_team
from grse_graph.llm import LLMConfig, ModelRoles, UsageLedger, load_config
from grse_graph.methods.grse.method import CritiqueRecord
from grse_graph.methods.grse.payload import PayloadLimits
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.tasks.registry import load_task
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.fakeserver import SCRIPTED_JUDGES, FakeOpenAIServer
from tests.tiny_task import write_tiny_task

pytestmark = pytest.mark.engine


class Notes(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: str


def users_team(model: Any) -> tuple[Any, SkillLibraryMiddleware, SkillLibraryMiddleware]:
    reader_skills = SkillLibrary.build(
        "reader",
        [
            Skill.build(
                name="quote-the-fact",
                description="Quote facts.",
                body="Quote the one sentence that answers the question.",
            )
        ],
    )
    writer_skills = SkillLibrary.build(
        "writer",
        [
            Skill.build(
                name="one-word-answer",
                description="Answer briefly.",
                body="Reply with `Answer: <one word>`.",
            )
        ],
    )
    reader_mw = SkillLibraryMiddleware(reader_skills)
    writer_mw = SkillLibraryMiddleware(writer_skills, mode="tool")
    reader = create_agent(model, system_prompt="You read the context.", middleware=[reader_mw])
    writer = create_agent(model, system_prompt="You write the answer.", middleware=[writer_mw])

    async def read(state: Notes) -> dict[str, Any]:
        out = await reader.ainvoke({"messages": state["messages"]})
        return {"notes": out["messages"][-1].text}

    async def write(state: Notes) -> dict[str, Any]:
        note = HumanMessage(content=f"Notes of the reader: {state['notes']}")
        out = await writer.ainvoke({"messages": [*state["messages"], note]})
        return {"messages": [AIMessage(content=out["messages"][-1].text)]}

    builder = StateGraph(Notes)
    builder.add_node("read", read)
    builder.add_node("write", write)
    builder.add_edge(START, "read")
    builder.add_edge("read", "write")
    builder.add_edge("write", END)
    return builder.compile(), reader_mw, writer_mw


def _train_once(llm: LLMConfig, data: Path, folder: Path) -> RunFolder:
    """One GRSE iteration of the users' team on the tiny task into `folder`."""
    config = TrainConfig(
        task="jsonl",
        data=str(data),
        iterations=1,
        group_size=2,
        batch_size=1,
        validation_size=2,
        concurrency=2,
        payload_limits=PayloadLimits(
            step_output_chars=400, tool_result_chars=300, step_input_chars=600
        ),
    )
    ledger = UsageLedger()
    run = RunFolder(folder)
    with ModelRoles(llm, ledger) as roles:
        graph, reader_mw, writer_mw = users_team(roles.chat("actor"))
        team = graph_team(graph, [reader_mw, writer_mw])
        deps = TrainingDeps(
            task=load_task("jsonl", data=data),
            provider=roles,
            config=config,
            run=run,
            team=team,
            initial_libraries=team.libraries(),
            usage=lambda: ledger.report().model_dump(mode="json"),
        )
        result = asyncio.run(run_training(deps))
    assert result.iterations_done == 1
    return run


def test_one_grse_iteration_evolves_the_users_own_agents(
    small_engine_url: str, tmp_path: Path
) -> None:
    data = write_tiny_task(tmp_path / "tiny.jsonl")
    with FakeOpenAIServer() as scripted:
        llm = load_config(
            env={},
            overrides={
                "actor.base_url": small_engine_url,
                "actor.max_tokens": 64,
                **{f"{role}.base_url": scripted.base_url(role) for role in SCRIPTED_JUDGES},
                **{f"{role}.model": "fake" for role in SCRIPTED_JUDGES},
            },
        )
        run = _train_once(llm, data, tmp_path / "run")

    rollouts = [r.rollout for r in run.rollouts.read()]
    assert len(rollouts) == 2  # one group of G = 2
    for rollout in rollouts:
        assert [s.agent for s in rollout.steps] == ["reader", "writer"]
        reader, writer = rollout.steps
        assert reader.input_ref is not None and reader.usage.prompt_tokens > 0
        # What the middleware recorded: the library each agent had, how it was shown, and
        # which skills the tool-mode agent loaded (every successful load_skill call).
        assert reader.skills_present == ["quote-the-fact"]
        assert "Quote the one sentence" in reader.system_prompt
        assert reader.skills_invoked == []
        assert writer.skills_present == ["one-word-answer"]
        assert "call the `load_skill` tool" in writer.system_prompt
        loads = [c for c in writer.tool_calls if c.name == "load_skill"]
        found = [c.arguments.get("name") for c in loads if c.result.startswith("# Skill:")]
        assert writer.skills_invoked == list(dict.fromkeys(found))
    (critique,) = run.credits(CritiqueRecord).read()
    assert critique.error is None and critique.result is not None, critique.error
    (gate,) = run.gate.read()
    assert 0.0 <= gate.base_score <= 1.0
    assert (run.path / "libraries" / "iter_1").is_dir()
    usage = run.read_usage()
    assert usage["roles"]["actor"]["calls"] >= 4
