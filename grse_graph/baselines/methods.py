"""Single-model baselines. Each answers one question with the provider's "actor" role and
returns a scored `Rollout` (one `Step` per model call), so `run_evaluation` writes the same files
for a baseline as for the team. Every model call is one user message without a system prompt
(GRSE App. F); a step's `system_prompt` is therefore empty."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.tasks.locomo import full_context_question
from grse_graph.team.agent import usage_of
from grse_graph.team.answer import extract_answer
from grse_graph.team.graph import input_ref
from grse_graph.team.rollout import Rollout, Step

from . import prompts
from .vote import feedback_says_correct, majority_vote

BaselineName = Literal["io", "cot", "cot-sc", "self-refine", "full-context"]
BASELINES: tuple[BaselineName, ...] = ("io", "cot", "cot-sc", "self-refine", "full-context")

COT_SC_SAMPLES = 5
COT_SC_TEMPERATURE = 0.7
SELF_REFINE_ROUNDS = 3
FULL_CONTEXT_MAX_TOKENS = 32


class _Trace:
    """Model calls of one question, recorded as steps."""

    def __init__(self, question: TaskQuestion, shared_input: str, config: RunnableConfig) -> None:
        self.question = question
        self.shared_input = shared_input
        self.config = config
        self.steps: list[Step] = []

    async def call(
        self,
        provider: ChatModelProvider,
        agent: str,
        user: str,
        *,
        sampling: SamplingSettings,
        max_tokens: int | None = None,
    ) -> str:
        model = provider.chat("actor", sampling=sampling, max_tokens=max_tokens)
        started = time.perf_counter()
        reply = await model.ainvoke([HumanMessage(content=user)], config=self.config)
        elapsed = time.perf_counter() - started
        if not isinstance(reply, AIMessage):
            raise TypeError(f"chat model returned {type(reply).__name__}, expected AIMessage")
        text = reply.text.strip()
        self.steps.append(
            Step(
                index=len(self.steps),
                agent=agent,
                system_prompt="",
                input=user,
                input_ref=input_ref(self.question) if self.shared_input in user else None,
                output=text,
                usage=usage_of(reply, elapsed),
            )
        )
        return text


# eq=False: a baseline is one answerer, compared by identity as before it was a dataclass.
@dataclass(eq=False)
class Baseline:
    """A single-model method. Subclasses implement `_respond` and return the final answer;
    their own settings are fields after the three every baseline has."""

    method: ClassVar[BaselineName] = "io"

    task: Task
    provider: ChatModelProvider
    sampling: SamplingSettings

    def describe(self) -> dict[str, Any]:
        """Sampling and the method's own settings (compared when a run is resumed)."""
        shared = {field.name for field in fields(Baseline)}
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in shared}
        return {"sampling": self.sampling.model_dump(), **own}

    async def _respond(self, question: TaskQuestion, trace: _Trace) -> str:
        raise NotImplementedError

    async def answer(self, question: TaskQuestion, *, rollout_id: str) -> Rollout:
        """Answer one question and score it with the task."""
        config: RunnableConfig = {
            "run_name": f"{self.method}:{question.id}",
            "metadata": {
                "rollout_id": rollout_id,
                "question_id": question.id,
                "method": self.method,
                "task": self.task.name,
            },
            "tags": ["grse-baseline"],
        }
        trace = _Trace(question, self.task.render_input(question), config)
        answer = await self._respond(question, trace)
        scored = self.task.score(question, answer)
        return Rollout(
            rollout_id=rollout_id,
            question_id=question.id,
            seed=self.sampling.seed,
            steps=trace.steps,
            answer=answer,
            reward=scored.reward,
            metrics=scored.metrics,
        )


class _OneCallBaseline(Baseline):
    """One call: the input with the method's `instruction`, the answer read from the reply."""

    instruction: ClassVar[str]

    async def _respond(self, question: TaskQuestion, trace: _Trace) -> str:
        text = await trace.call(
            self.provider,
            self.method,
            prompts.single_input(trace.shared_input, self.instruction),
            sampling=self.sampling,
        )
        return extract_answer(text)


class IOBaseline(_OneCallBaseline):
    """Direct prompting: the input, then the short answer."""

    method = "io"
    instruction = prompts.IO_INSTRUCTION


class CoTBaseline(_OneCallBaseline):
    """Chain of thought: reason step by step, then the `Answer:` line."""

    method = "cot"
    instruction = prompts.COT_INSTRUCTION


@dataclass(eq=False)
class CoTSCBaseline(Baseline):
    """Self-consistency: 5 chain-of-thought samples at temperature 0.7, majority vote over
    normalised answers. Sample i uses seed `base + i` (base = the run's seed or 0) so the samples
    differ and a rerun reproduces them."""

    method = "cot-sc"
    samples: int = COT_SC_SAMPLES
    temperature: float = COT_SC_TEMPERATURE

    def sample_settings(self, index: int) -> SamplingSettings:
        """Sampling of sample `index`."""
        base = self.sampling.seed or 0
        return self.sampling.model_copy(
            update={"temperature": self.temperature, "seed": base + index}
        )

    async def _respond(self, question: TaskQuestion, trace: _Trace) -> str:
        answers = []
        for index in range(self.samples):
            text = await trace.call(
                self.provider,
                f"{self.method}-{index + 1}",
                prompts.single_input(trace.shared_input, prompts.COT_INSTRUCTION),
                sampling=self.sample_settings(index),
            )
            answers.append(extract_answer(text))
        winner, _ = majority_vote(answers)
        return winner


@dataclass(eq=False)
class SelfRefineBaseline(Baseline):
    """Self-Refine: a chain-of-thought attempt, then at most 3 rounds of feedback and revision,
    stopping as soon as the feedback says CORRECT."""

    method = "self-refine"
    rounds: int = SELF_REFINE_ROUNDS

    async def _respond(self, question: TaskQuestion, trace: _Trace) -> str:
        attempt = await trace.call(
            self.provider,
            "initial",
            prompts.single_input(trace.shared_input, prompts.COT_INSTRUCTION),
            sampling=self.sampling,
        )
        for _ in range(self.rounds):
            feedback = await trace.call(
                self.provider,
                "feedback",
                prompts.feedback_input(trace.shared_input, attempt),
                sampling=self.sampling,
            )
            if feedback_says_correct(feedback):
                break
            attempt = await trace.call(
                self.provider,
                "revise",
                prompts.revise_input(trace.shared_input, attempt, feedback),
                sampling=self.sampling,
            )
        return extract_answer(attempt)


@dataclass(eq=False)
class FullContextBaseline(Baseline):
    """The LoCoMo full-context protocol: the whole conversation (or all passages) in one prompt,
    the benchmark's short-phrase instruction and its temporal suffix for category-2 questions,
    answers capped at 32 tokens."""

    method = "full-context"
    max_tokens: int = FULL_CONTEXT_MAX_TOKENS

    async def _respond(self, question: TaskQuestion, trace: _Trace) -> str:
        user = prompts.full_context_input(
            self.task.render_full_context(question), full_context_question(question)
        )
        text = await trace.call(
            self.provider,
            self.method,
            user,
            sampling=self.sampling,
            max_tokens=self.max_tokens,
        )
        return extract_answer(text)


_CLASSES: dict[BaselineName, type[Baseline]] = {
    "io": IOBaseline,
    "cot": CoTBaseline,
    "cot-sc": CoTSCBaseline,
    "self-refine": SelfRefineBaseline,
    "full-context": FullContextBaseline,
}


def make_baseline(
    method: BaselineName,
    task: Task,
    provider: ChatModelProvider,
    sampling: SamplingSettings | None = None,
    **settings: Any,
) -> Baseline:
    """The baseline called `method` (greedy decoding unless `sampling` is given), with its own
    `settings` (CoT-SC's samples and temperature, Self-Refine's rounds, the full-context
    answer cap; default: the paper's)."""
    if method not in _CLASSES:
        raise ValueError(f"unknown baseline {method!r} (known: {', '.join(BASELINES)})")
    return _CLASSES[method](task, provider, sampling or SamplingSettings.greedy(), **settings)
