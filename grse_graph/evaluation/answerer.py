"""The thing that answers a question during evaluation: the team or a single-model baseline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team.rollout import Rollout
from grse_graph.team.run import run_rollout
from grse_graph.team.spec import TeamSpec


@runtime_checkable
class QuestionAnswerer(Protocol):
    """Produces a scored `Rollout` for one question.

    `method` names it in `run.json` and reports ("team", "io", "cot", ...); `describe()` is
    the rest of its configuration, compared when a run is resumed.
    """

    @property
    def method(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...

    async def answer(self, question: TaskQuestion, *, rollout_id: str) -> Rollout: ...


class TeamAnswerer:
    """Answers with one execution of an agent team.

    `replay` maps question ids to an earlier greedy execution of the same question (for
    example another library's evaluation): under greedy sampling every agent whose prompt is
    unchanged reuses its recorded step instead of calling the model (`TeamState.replay`).
    """

    method = "team"

    def __init__(
        self,
        spec: TeamSpec,
        task: Task,
        provider: ChatModelProvider,
        sampling: SamplingSettings,
        metadata: dict[str, Any] | None = None,
        replay: Mapping[str, Rollout] | None = None,
    ) -> None:
        self.spec = spec
        self.task = task
        self.provider = provider
        self.sampling = sampling
        self.metadata = dict(metadata or {})
        self.replay = dict(replay or {})

    def describe(self) -> dict[str, Any]:
        """Agents with their skill mode, library contents and tool protocol (named only when
        not function calling, so folders written before protocols existed still resume), and
        the sampling settings."""
        return {
            "topology": self.spec.topology,
            "agents": [
                {
                    "name": agent.name,
                    "skill_mode": agent.skill_mode,
                    "skills": sorted(skill.name for skill in agent.library.skills),
                    **(
                        {"tool_protocol": agent.tool_protocol}
                        if agent.tool_protocol != "function"
                        else {}
                    ),
                }
                for agent in self.spec.agents
            ],
            "sampling": self.sampling.model_dump(),
        }

    async def answer(self, question: TaskQuestion, *, rollout_id: str) -> Rollout:
        """One team rollout, scored by the task."""
        earlier = self.replay.get(question.id)
        return await run_rollout(
            self.spec,
            self.task,
            question,
            self.provider,
            sampling=self.sampling,
            rollout_id=rollout_id,
            metadata={**self.metadata, "method": self.method},
            replay=earlier.steps if earlier is not None and earlier.error is None else (),
        )
