"""Fakes for the SkillMAS tests: a two-category passage task and a provider whose models answer
by role (actor: by question category and team; critic/optimizer: by the bound schema)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool

from grse_graph.llm.provider import ChatModelProvider, RoleName, SamplingSettings
from grse_graph.methods.operators.driver import OperatorRule, run_rule
from grse_graph.methods.skillmas.designer import Create, Learn
from grse_graph.methods.skillmas.forge import Prune, Refine
from grse_graph.methods.skillmas.settings import EvolutionSettings
from grse_graph.methods.skillmas.work import EvolutionAction, EvolutionWork, RoundEvidence
from grse_graph.tasks.base import ScoredAnswer, TaskQuestion

GOLD = "blue"
Responder = Callable[[str, list[BaseMessage]], dict[str, Any]]


class TwoTypeTask:
    """Passage task: train questions t0..t5, `single-hop` ones and `multi-hop` ones; F1 = 1 iff
    the answer is `blue`."""

    name = "twotype"
    kind = "passages"

    def __init__(self, single: int = 3, multi: int = 3) -> None:
        self.categories = ["single-hop", "multi-hop"]
        train = [
            TaskQuestion(
                id=f"t{i}",
                question=f"What colour is item {i}?",
                answer=GOLD,
                category="single-hop" if i < single else "multi-hop",
            )
            for i in range(single + multi)
        ]
        self._splits = {
            "train": train,
            "validation": [TaskQuestion(id="v0", question="What colour?", answer=GOLD)],
            "test": [],
        }

    def splits(self) -> Mapping[str, Sequence[TaskQuestion]]:
        return self._splits

    def split(self, name: str) -> Sequence[TaskQuestion]:
        return self._splits[name]

    def render_input(self, question: TaskQuestion) -> str:
        return f"Question: {question.question}"

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]:
        return []

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        f1 = 1.0 if prediction.strip().lower() == question.answer else 0.0
        return ScoredAnswer(reward=f1, metrics={"f1": f1})


class InjectedFailure(RuntimeError):
    """The failure a test injects into the n-th model call."""


@dataclass
class Calls:
    """Every model call (role, schema or 'text'); `fail_on` makes that call number raise."""

    log: list[tuple[str, str]] = field(default_factory=list)
    fail_on: int | None = None

    def record(self, role: str, kind: str) -> None:
        self.log.append((role, kind))
        if self.fail_on is not None and len(self.log) == self.fail_on:
            raise InjectedFailure(f"injected failure on call {self.fail_on}")

    def count(self, kind: str) -> int:
        return sum(1 for _, k in self.log if k == kind)


def _tool_name(tool: Any) -> str:
    if isinstance(tool, type):
        return tool.__name__
    if isinstance(tool, dict):
        return str(tool.get("function", {}).get("name") or tool.get("name"))
    return str(getattr(tool, "name", tool))


def colour_actor(messages: list[BaseMessage]) -> str:
    """Right on single-hop questions, wrong on multi-hop ones (item >= 3)."""
    text = " ".join(str(m.content) for m in messages)
    wrong = any(f"item {i}?" in text for i in range(3, 10))
    return f"Answer: {'red' if wrong else GOLD}"


class FakeModel(BaseChatModel):
    role: str
    calls: Any
    responder: Any
    actor: Any
    bound: tuple[str, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "skillmas-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeModel:  # type: ignore[override]
        return self.model_copy(update={"bound": tuple(_tool_name(t) for t in tools)})

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        schema = self.bound[0] if self.bound else "text"
        self.calls.record(self.role, schema)
        if schema == "text":
            message = AIMessage(content=self.actor(messages))
        else:
            args_ = self.responder(schema, messages)
            message = AIMessage(content="", tool_calls=[{"name": schema, "args": args_, "id": "c"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


class FakeProvider:
    """A `ChatModelProvider` handing out `FakeModel`s that share one call log."""

    def __init__(
        self,
        responder: Responder,
        calls: Calls | None = None,
        actor: Callable[[list[BaseMessage]], str] = colour_actor,
    ) -> None:
        self.responder = responder
        self.calls = calls or Calls()
        self.actor = actor

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        return FakeModel(role=role, calls=self.calls, responder=self.responder, actor=self.actor)


HANDOFF_ANALYSIS: dict[str, Any] = {
    "pattern": "multi-hop questions answered by an agent not suited to them",
    "causal_explanation": "The reasoner answers multi-hop questions without a bridge step.",
    "proposed_fix": "Route multi-hop questions through a specialist first.",
    "evidence_refs": [1],
    "recommended_action": "scale_agent",
    "implicated_agents": ["reasoner"],
    "implicated_skills": [],
    "dominant_cause": "bad executor assignment",
    "unique": True,
    "tag": "handoff-to-structure",
}


def handoff_responder(schema: str, messages: list[BaseMessage]) -> dict[str, Any]:
    """Analyst: handoff-to-structure; judge: nothing followed; writers: a valid skill."""
    if schema == "ClusterAnalysis":
        return HANDOFF_ANALYSIS
    if schema == "FollowedSkills":
        return {"used": []}
    return {
        "agent": "reasoner",
        "description": "Answer colour questions with the colour word.",
        "body": SKILL_BODY,
    }


SKILL_BODY = (
    "## When to use\nColour questions about an item.\n\n## Steps\n1. Find the item in the "
    "passage.\n2. Read the colour stated next to it.\n3. Answer with that colour word only.\n\n"
    "## Guards\nDo not guess a colour the passage does not state.\n\n## Checks\nThe answer is a "
    "single colour word taken from the passage."
)


# One SkillMAS operator alone on a workspace (the round runs all four: `evolve_skills`).


async def _run(
    work: EvolutionWork, rule: OperatorRule[EvolutionWork, Any, EvolutionAction]
) -> None:
    _, actions = await run_rule(work, rule)
    work.actions.extend(actions)


async def learn(work: EvolutionWork, ev: RoundEvidence, provider: ChatModelProvider) -> None:
    await _run(work, Learn(ev, provider, EvolutionSettings()))


async def create(
    work: EvolutionWork,
    ev: RoundEvidence,
    provider: ChatModelProvider,
    require_diagnosis: bool = True,
) -> None:
    await _run(work, Create(ev, provider, EvolutionSettings(), require_diagnosis))


async def refine(work: EvolutionWork, ev: RoundEvidence, provider: ChatModelProvider) -> None:
    await _run(work, Refine(ev, provider, EvolutionSettings()))


def prune(work: EvolutionWork) -> None:
    rule = Prune(EvolutionSettings())  # no model call: its actions run without an event loop
    for target in rule.targets(work):
        if rule.applicable(work, target):
            work.actions.extend(rule.act(work, target)[1])
