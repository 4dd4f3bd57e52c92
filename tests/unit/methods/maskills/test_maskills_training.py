"""MASkills through the training graph with fake models: registry, config, two iterations."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from grse_graph.llm.provider import RoleName, SamplingSettings
from grse_graph.llm.structured import SCHEMA_NARROWING_KEY
from grse_graph.methods.base import CreditInputs, CreditUnit
from grse_graph.methods.maskills import MaskillsMethod, MaskillsRecord, MaskillsSettings
from grse_graph.methods.registry import create_method
from grse_graph.team import default_team
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.unit.methods.maskills.maskills_builders import library, question, skill, trajectory
from tests.unit.training.fakes import GOLD, SKILL_MARK, TinyTask

DRAFT = {
    "name": "colour-answers",
    "description": "Answer colour questions with the colour word. Use for colour questions.",
    "body": "Reply with one word: the colour. End with 'Answer: <colour>'.",
}


def _critique(schema: dict[str, Any]) -> dict[str, Any]:
    """A credit for every (agent, skill) the schema advertises, a residual per agent."""
    credits = []
    for name, definition in schema.get("$defs", {}).items():
        if not name.startswith("MaskillsCredit_"):
            continue
        props = definition["properties"]
        for skill_id in props["skill_id"]["enum"]:
            credits.append(
                {
                    "agent": props["agent"]["enum"][0],
                    "skill_id": skill_id,
                    "evidence": "the answer was the colour word",
                    "verdict": "helped",
                    "utility_delta": 0.5,
                    "suggested_edit": "",
                    "redundant_with": [],
                    "conflicts_with": [],
                }
            )
    agents = next(
        d["properties"]["agent"]["enum"] for n, d in schema["$defs"].items() if n == "AgentResidual"
    )
    residuals = [
        {
            "agent": a,
            "summary": "answered with another colour" if not credits else "",
            "needs_new_skill": not credits and a == "reasoner",
            "missing_capability": "answer with the exact colour word" if not credits else "",
        }
        for a in agents
    ]
    return {"credits": credits, "residuals": residuals}


class FakeModel(BaseChatModel):
    """Actor: right iff its system prompt holds skills. Critic and optimizer: fill the bound
    schema. Every call is logged as (role, schema)."""

    role: str
    log: Any  # a `CallLog` (not a list: pydantic would copy it)
    tools: tuple[Any, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "maskills-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeModel:  # type: ignore[override]
        return self.model_copy(update={"tools": tuple(tools)})

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if self.role == "actor":
            self.log.calls.append(("actor", "text"))
            good = SKILL_MARK in str(messages[0].content)
            message = AIMessage(content=f"Answer: {GOLD if good else 'red'}")
            return ChatResult(generations=[ChatGeneration(message=message)])
        schema = self.tools[0]
        name = schema.__name__
        self.log.calls.append((self.role, name))
        replies = {
            "TrajectoryCritique": lambda: _critique(schema.model_json_schema()),
            "SkillDraft": lambda: DRAFT,
            "RefineEdits": lambda: {"edits": []},
            "MergedGradient": lambda: {
                "summary": "helps",
                "verdict": "keep",
                "suggested_edit": "",
                "redundant_with": [],
                "utility_score": 0.5,
            },
        }
        message = AIMessage(
            content="", tool_calls=[{"name": name, "args": replies[name](), "id": "c1"}]
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class CallLog:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def count(self, kind: str) -> int:
        return sum(1 for _, k in self.calls if k == kind)


class FakeProvider:
    def __init__(self) -> None:
        self.log = CallLog()

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        # Per-agent variants: the fake critic reads each agent's skills off its own variant.
        metadata = {SCHEMA_NARROWING_KEY: "per_agent"}
        return FakeModel(role=role, log=self.log, metadata=metadata)


def test_maskills_is_registered_and_its_section_loads_from_config() -> None:
    config = TrainConfig.model_validate({"task": "tiny", "method": {"name": "maskills"}})
    assert isinstance(config.method, MaskillsSettings)
    method = create_method(config.method)
    assert isinstance(method, MaskillsMethod)
    assert method.rollouts_per_question() == 1
    again = TrainConfig.model_validate_json(config.model_dump_json())
    assert again == config


def test_a_failed_critic_call_keeps_the_trajectory_trace() -> None:
    libs = {"retriever": library("retriever", skill("extract")), "reasoner": library("reasoner")}
    rollout = trajectory(libs, outputs=("plain", "Answer: red"))
    unit = CreditUnit(unit_id="u", question_id="q1", rollout_ids=[rollout.rollout_id])
    task = TinyTask()
    inputs = CreditInputs(
        iteration=1,
        question=question(),
        libraries=libs,
        rollouts=[rollout],
        provider=FakeProvider(),
        team=default_team(task),  # type: ignore[arg-type]
        task=task,  # type: ignore[arg-type]
    )
    record = MaskillsMethod(MaskillsSettings()).failed_record(unit, inputs, "boom")
    assert isinstance(record, MaskillsRecord)
    assert record.error == "boom" and record.result is None
    assert record.trace.skills_of("retriever") == ["extract"]
    assert record.reward == 0.0


def test_two_maskills_iterations_end_to_end(tmp_path: Path) -> None:
    provider = FakeProvider()
    config = TrainConfig.model_validate(
        {
            "task": "tiny",
            "method": {"name": "maskills"},
            "iterations": 2,
            "batch_size": 2,
            "validation_size": 2,
            "concurrency": 1,
        }
    )
    deps = TrainingDeps(task=TinyTask(), provider=provider, config=config, run=RunFolder(tmp_path))
    result = asyncio.run(run_training(deps))
    run = RunFolder(tmp_path)
    assert result.iterations_done == 2

    # One rollout per question, one critic call per trajectory.
    assert len(run.rollouts.read()) == 4
    records = run.credits(MaskillsRecord).read()
    assert [r.iteration for r in records] == [1, 1, 2, 2]
    assert all(r.result is not None and r.error is None for r in records)
    assert provider.log.count("TrajectoryCritique") == 4

    # Iteration 1, empty libraries: no credits. Both trajectories failed, so they are hard
    # cases for EVERY agent (not only the one the residual blames): both agents induce one skill.
    first, second = run.gate.read()
    assert sorted((d.agent, d.accepted) for d in first.decisions) == [
        ("reasoner", True),
        ("retriever", True),
    ]
    assert first.skills_after == {"retriever": ["colour-answers"], "reasoner": ["colour-answers"]}
    assert provider.log.count("SkillDraft") == 2

    # Iteration 2: the new skills are present but never named or loaded, and still credited.
    for r in records[2:]:
        assert r.trace.skills_of("reasoner") == ["colour-answers"]
        assert sorted((c.agent, c.skill_id) for c in r.result.credits) == [  # type: ignore[union-attr]
            ("reasoner", "colour-answers"),
            ("retriever", "colour-answers"),
        ]
    # Two credits per skill: one optimizer merge call per skill, no new induction.
    assert provider.log.count("MergedGradient") == 2
    assert provider.log.count("SkillDraft") == 2
    final = RunFolder(tmp_path).load_library(second.library_paths["reasoner"], "reasoner", 4)
    colour = final.get("colour-answers")
    assert colour.utility == 0.2  # 0.6 * 0 + 0.4 * mean(0.5, 0.5)
    assert colour.invocations == 2
    assert second.decisions == []  # nothing changed in iteration 2: no candidate to gate
    report = (tmp_path / "report.md").read_text()
    assert "## MASkills credit" in report
    assert report.startswith("# MASkills training report: tiny")
