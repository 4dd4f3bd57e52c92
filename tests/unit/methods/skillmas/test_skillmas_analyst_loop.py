"""Row 14's option: the code's tool-using analyst loop (at most six turns, a tool call every
turn, read-only evidence tools, a submission checked by the schema and the code's checks).

The last test runs the loop through the real client path (`ModelRoles` -> ChatOpenAI -> HTTP)
against the scripted server: the engine test of the loop checks only its plumbing (the small
model calls no tool), so this one must end in a checked analysis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.methods.skillmas.analyst_loop import ToolLoopAnalyst
from grse_graph.methods.skillmas.diagnosis import AnalystEvidence, cluster_failures, diagnose
from grse_graph.methods.skillmas.retention import retain
from grse_graph.methods.skillmas.round import agent_boundaries
from grse_graph.methods.skillmas.team import TeamMember
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.team.rollout import Rollout, Step
from tests.fakeserver import FakeOpenAIServer
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


def analyst(provider: Any, **fields: Any) -> tuple[ToolLoopAnalyst, list[Any]]:
    traces, rollouts = evidence()
    members = [TeamMember(name="retriever", seed=True), TeamMember(name="reasoner", seed=True)]
    loop = ToolLoopAnalyst(
        AnalystEvidence(rollouts, {"q0": "blue", "q1": "blue"}, {}, provider),
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
    loop, clusters = analyst(ScriptedProvider(script))
    (found,) = asyncio.run(diagnose(clusters, loop))
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
    loop, clusters = analyst(ScriptedProvider(script))
    (found,) = asyncio.run(diagnose(clusters, loop))
    assert len(script.seen) == 6 and found.analysis is None and found.tag == "none"
    assert found.error is not None and "no valid submission within 6 turns" in found.error
    last = script.seen[-1]
    texts = [str(m.content) for m in last]
    assert any("Every turn must call a tool" in t for t in texts)
    assert any("does not fit cause" in t for t in texts)
    assert any("no episode 'F9'" in t for t in texts)
    assert any("no skill 'reasoner/none'" in t for t in texts)


def scripted_analyst(body: Mapping[str, Any], fingerprint: str) -> list[dict[str, Any]]:
    """The fake server's analyst: compares F1's answer, then submits `GOOD` once a tool's
    answer is in the transcript."""
    answered = any(message.get("role") == "tool" for message in body["messages"])
    name, args = ("SubmitAnalysis", GOOD) if answered else ("CompareAnswer", {"ref": "F1"})
    function = {"name": name, "arguments": json.dumps(args)}
    call = {"id": f"call_{fingerprint[:8]}", "type": "function", "function": function}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return [{"index": 0, "message": message, "finish_reason": "tool_calls"}]


def test_loop_over_http_with_a_scripted_analyst_ends_in_a_checked_analysis() -> None:
    with FakeOpenAIServer(reply=scripted_analyst) as server:
        llm = load_config(
            env={}, overrides={"critic.base_url": server.base_url("critic"), "critic.model": "fake"}
        )
        ledger = UsageLedger()
        with ModelRoles(llm, ledger) as roles:
            loop, clusters = analyst(roles)
            (found,) = asyncio.run(diagnose(clusters, loop))
        bodies = [server.bodies[record.fingerprint] for record in server.records]

    assert found.error is None and found.analysis is not None, found.error
    assert found.checks_failed == [] and found.unique and found.tag == "add-guard"
    assert found.turns == 2 and found.tools_called == ["CompareAnswer", "SubmitAnalysis"]
    assert ledger.report().roles["critic"].calls == 2
    # Every turn offered the seven tools without forcing one, at the analyst's temperature.
    for body in bodies:
        assert [t["function"]["name"] for t in body["tools"]][-1] == "SubmitAnalysis"
        assert len(body["tools"]) == 7 and body.get("tool_choice") in (None, "auto")
        assert body["temperature"] == 0.1
    # The second turn carries the replayed call (content one space) and the tool's answer.
    replayed, answer = bodies[1]["messages"][-2:]
    assert replayed["role"] == "assistant" and replayed["content"] == " "
    assert replayed["tool_calls"][0]["function"]["name"] == "CompareAnswer"
    assert answer["role"] == "tool" and "gold answer: blue" in answer["content"]
    assert "prediction: red" in answer["content"]
