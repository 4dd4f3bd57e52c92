"""Row 14's option: the code's tool-using analyst loop (at most six turns, a tool call every
turn, read-only evidence tools, a submission checked by the schema and the code's checks)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from grse_graph.methods.skillmas.analyst_loop import ToolLoopAnalyst
from grse_graph.methods.skillmas.diagnosis import cluster_failures, diagnose
from grse_graph.methods.skillmas.retention import retain
from grse_graph.methods.skillmas.round import agent_boundaries
from grse_graph.methods.skillmas.team import TeamMember
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.team.rollout import Rollout, Step
from tests.unit.methods.skillmas.skillmas_fakes import HANDOFF_ANALYSIS

GOOD = {
    **HANDOFF_ANALYSIS,
    "dominant_cause": "missing precondition",
    "tag": "add-guard",
    "recommended_action": "create_skill",
}


@dataclass
class Script:
    """Replies handed out in order; every prompt the model saw, and the tools bound."""

    replies: list[AIMessage]
    seen: list[list[BaseMessage]] = field(default_factory=list)
    bound: list[str] = field(default_factory=list)


class ScriptedModel(BaseChatModel):
    script: Any

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        self.script.bound = [t.__name__ for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.script.seen.append(list(messages))
        reply = self.script.replies.pop(0) if self.script.replies else AIMessage(content="...")
        return ChatResult(generations=[ChatGeneration(message=reply)])


class ScriptedProvider:
    def __init__(self, script: Script) -> None:
        self.script = script

    def chat(self, role: Any, *, sampling: Any = None, max_tokens: Any = None) -> BaseChatModel:
        assert role == "critic" and sampling.temperature == 0.1
        return ScriptedModel(script=self.script)


def call(name: str, n: int, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{n}"}])


def evidence() -> tuple[list[VerifiedTrace], dict[str, Rollout]]:
    traces = [
        VerifiedTrace(
            rollout_id=f"f{i}",
            question_id=f"q{i}",
            task_type="multi-hop",
            task=f"What colour is item {i}?",
            success=False,
            score=0.0,
            executors=["retriever", "reasoner"],
            error_message="wrong",
            summary=f"Q: item {i} | gold: blue | pred: red | F1 0.00",
            action_trace=["retriever > respond(looked)", "reasoner > respond(Answer: red)"],
        )
        for i in range(2)
    ]
    traces.append(traces[0].model_copy(update={"rollout_id": "s0", "success": True, "score": 1.0}))
    rollouts = {
        t.rollout_id: Rollout(
            rollout_id=t.rollout_id,
            question_id=t.question_id,
            answer="red",
            steps=[
                Step(index=0, agent="reasoner", system_prompt="", input="", output="Answer: red")
            ],
        )
        for t in traces
    }
    return traces, rollouts


def analyst(script: Script, **fields: Any) -> tuple[ToolLoopAnalyst, list[Any]]:
    traces, rollouts = evidence()
    members = [TeamMember(name="retriever", seed=True), TeamMember(name="reasoner", seed=True)]
    loop = ToolLoopAnalyst(
        rollouts=rollouts,
        gold={"q0": "blue", "q1": "blue"},
        libraries={},
        provider=ScriptedProvider(script),  # type: ignore[arg-type]
        successes=[t for t in traces if t.success],
        agent_boundaries=agent_boundaries(members, {"reasoner": "You answer."}),
        **fields,
    )
    return loop, cluster_failures(retain(traces, {}).items, traces)


def test_loop_investigates_rejects_a_bad_submission_and_accepts_a_valid_one() -> None:
    script = Script(
        [
            call("ListEvidence", 1),
            call("CompareAnswer", 2, ref="F1"),
            call("ReadAgentBoundary", 3, agent="reasoner"),
            call("SubmitAnalysis", 4, **{**GOOD, "causal_explanation": "too short"}),
            call("SubmitAnalysis", 5, **GOOD),
        ]
    )
    loop, clusters = analyst(script)
    (found,) = asyncio.run(
        diagnose(clusters, rollouts={}, gold={}, libraries={}, provider=None, analyst=loop)  # type: ignore[arg-type]
    )
    assert script.bound[-1] == "SubmitAnalysis" and "CompareAnswer" in script.bound
    assert found.turns == 5 and found.tag == "add-guard" and found.unique
    assert found.tools_called == [
        "ListEvidence",
        "CompareAnswer",
        "ReadAgentBoundary",
        "SubmitAnalysis",
        "SubmitAnalysis",
    ]
    # tool-calling replies go back with one space, not null (llama-cpp-python rejects null)
    assert {m.content for m in script.seen[-1] if isinstance(m, AIMessage)} == {" "}
    answers = [m.content for m in script.seen[-1] if isinstance(m, ToolMessage)]
    assert "F1: wrong" in answers[0] and "S1: success" in answers[0]
    assert "gold answer: blue" in answers[1] and "prediction: red" in answers[1]
    assert "role: You answer." in answers[2]
    assert "causal explanation under 24 characters" in answers[3]


def test_no_valid_submission_within_the_budget_means_no_analysis() -> None:
    mismatch = {**GOOD, "tag": "split-skill"}  # does not fit "missing precondition"
    script = Script(
        [
            AIMessage(content="I think it is the reasoner."),  # no tool call: the turn counts
            call("SubmitAnalysis", 2, **mismatch),
            call("ReadTrace", 3, ref="F9"),
            call("ReadSkillBoundary", 4, skill="reasoner/none"),
            call("ListEvidence", 5),
            call("ListEvidence", 6),
            call("SubmitAnalysis", 7, **GOOD),  # turn 7: never reached
        ]
    )
    loop, clusters = analyst(script)
    (found,) = asyncio.run(
        diagnose(clusters, rollouts={}, gold={}, libraries={}, provider=None, analyst=loop)  # type: ignore[arg-type]
    )
    assert len(script.seen) == 6 and found.analysis is None and found.tag == "none"
    assert found.error is not None and "no valid submission within 6 turns" in found.error
    last = script.seen[-1]
    texts = [str(m.content) for m in last]
    assert any("Every turn must call a tool" in t for t in texts)
    assert any("does not fit cause" in t for t in texts)
    assert any("no episode 'F9'" in t for t in texts)
    assert any("no skill 'reasoner/none'" in t for t in texts)
