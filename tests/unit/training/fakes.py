"""Fakes for the training-graph tests: a tiny passage task and a provider whose models answer by
role and by the schema they are asked to fill, counting every call (and failing on request)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool

from grse_graph.llm.provider import RoleName, SamplingSettings
from grse_graph.tasks.base import ScoredAnswer, TaskQuestion

SKILL_MARK = "## Skills"
GOLD = "blue"


class TinyTask:
    """Passage-kind task with 4 train and 2 validation questions; reward 1 iff answer == blue."""

    name = "tiny"
    kind = "passages"

    def __init__(self, train: int = 4, validation: int = 2) -> None:
        self.categories: list[str] = []

        def make(prefix: str, n: int) -> list[TaskQuestion]:
            return [
                TaskQuestion(
                    id=f"{prefix}{i}", question=f"What colour is item {prefix}{i}?", answer=GOLD
                )
                for i in range(n)
            ]

        self._splits = {
            "train": make("t", train),
            "validation": make("v", validation),
            "test": make("x", 2),
        }

    def splits(self) -> Mapping[str, Sequence[TaskQuestion]]:
        return self._splits

    def split(self, name: str) -> Sequence[TaskQuestion]:
        return self._splits[name]

    def render_input(self, question: TaskQuestion) -> str:
        return f"Question: {question.question}"

    def render_full_context(self, question: TaskQuestion) -> str:
        return ""

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]:
        return []

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        reward = 1.0 if prediction.strip().lower() == question.answer else 0.0
        return ScoredAnswer(reward=reward, metrics={"em": reward})


class InjectedFailure(RuntimeError):
    """The failure a test injects into the k-th model call."""


@dataclass
class CallLog:
    """Counts model calls per role; `fail_on` makes the call with that global number raise."""

    calls: list[tuple[RoleName, str]] = field(default_factory=list)
    fail_on: int | None = None

    def record(self, role: RoleName, kind: str) -> None:
        self.calls.append((role, kind))
        if self.fail_on is not None and len(self.calls) == self.fail_on:
            raise InjectedFailure(f"injected failure on call {self.fail_on}")

    def count(self, role: RoleName) -> int:
        return sum(1 for r, _ in self.calls if r == role)


def _tool_name(tool: Any) -> str:
    if isinstance(tool, type):
        return tool.__name__
    if isinstance(tool, dict):
        return str(tool.get("function", {}).get("name") or tool.get("name"))
    return str(getattr(tool, "name", tool))


# Canned structured replies, by schema name.
CRITIC_REPLY: dict[str, Any] = {
    "credits": [],
    "agent_feedback": [
        {
            "agent": "reasoner",
            "feedback": "Wrong rollouts answered with another colour than the passage states.",
            "missing_capability": "answer with the exact colour word",
        }
    ],
    # A failing group must carry a diagnosis; r1's reward depends on the seed, so this one is
    # accepted or, after the (scripted, empty) repair, dropped: both paths are deterministic.
    "diagnoses": [
        {
            "agent": "reasoner",
            "skill_id": None,
            "failure_type": "answer_format",
            "failed_refs": ["r1.s2"],
            "successful_refs": [],
            "explanation": "Answered with another colour than the passage states.",
            "correction": "Answer with the exact colour word.",
            "action": "induce",
        }
    ],
}
DRAFT_REPLY: dict[str, Any] = {
    "name": "colour-answers",
    "description": "Answer colour questions with the single colour word. Use for colour questions.",
    "body": "Reply with one word: the colour. End with 'Answer: <colour>'.",
}


class RoleModel(BaseChatModel):
    """Actor: with skills in its system prompt it answers right iff `skills_help`; without,
    greedy (no seed) answers right iff not `skills_help`, sampled answers right for even seeds.
    Critic/optimizer: fill the bound schema from canned replies."""

    role: str
    seed: int | None = None
    skills_help: bool = True
    honours_n: bool = False
    log: Any = None
    bound: tuple[str, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "role-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RoleModel:  # type: ignore[override]
        return self.model_copy(update={"bound": tuple(_tool_name(t) for t in tools)})

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        schema = self.bound[0] if self.bound else "text"
        self.log.record(self.role, schema)
        if self.role == "actor":
            choices = int(kwargs.get("n") or 1) if self.honours_n else 1
            return ChatResult(
                generations=[
                    ChatGeneration(message=self._actor_reply(messages, i)) for i in range(choices)
                ]
            )
        else:
            args_by_schema: dict[str, Any] = {
                "CriticOutput": CRITIC_REPLY,
                "CriticRepair": {"diagnoses": [], "credits": []},
                "SkillDraft": DRAFT_REPLY,
                "RefineEdits": {"edits": []},
                "MergedDirection": {"summary": "merged", "suggested_edit": "", "verdict": "keep"},
            }
            if schema in args_by_schema:
                message = AIMessage(
                    content="",
                    tool_calls=[{"name": schema, "args": args_by_schema[schema], "id": "c1"}],
                )
            else:
                message = AIMessage(content="## reasoner\nAnswer with the colour word only.")
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _actor_reply(self, messages: list[BaseMessage], choice: int) -> AIMessage:
        system = str(messages[0].content) if messages else ""
        if SKILL_MARK in system:
            good = self.skills_help
        elif self.seed is None:
            good = not self.skills_help
        else:
            good = (self.seed + choice) % 2 == 0
        return AIMessage(content=f"Answer: {GOLD if good else 'red'}")


class CountingProvider:
    """A `ChatModelProvider` of `RoleModel`s sharing one `CallLog`."""

    def __init__(self, log: CallLog, skills_help: bool = True, honours_n: bool = False) -> None:
        self.log = log
        self.skills_help = skills_help
        self.honours_n = honours_n

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        seed = sampling.seed if sampling is not None else None
        return RoleModel(
            role=role,
            seed=seed,
            log=self.log,
            skills_help=self.skills_help,
            honours_n=self.honours_n,
        )
