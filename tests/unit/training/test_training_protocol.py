"""Issue 9 in the training loop: a failed execution is recorded, not fatal (item 8); sampled
validation pairs base and candidates on the same seeds and reports the difference (item 5)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from grse_graph.errors import ModelRequestRefused
from grse_graph.llm.provider import RoleName, SamplingSettings
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.unit.training.fakes import CallLog, CountingProvider, RoleModel, TinyTask


class RefusingModel(RoleModel):
    """Refuses every request about item t0, as a server refuses a prompt beyond its context."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if any("item t0" in str(m.content) for m in messages):
            raise ModelRequestRefused("actor: the prompt is beyond the model's context")
        return super()._generate(messages, *args, **kwargs)


class RefusingProvider(CountingProvider):
    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        model = super().chat(role, sampling=sampling, max_tokens=max_tokens)
        if role != "actor":
            return model
        return RefusingModel(**{k: getattr(model, k) for k in RoleModel.model_fields})


def _config(**changes: Any) -> TrainConfig:
    base: dict[str, Any] = {
        "task": "tiny",
        "iterations": 1,
        "group_size": 2,
        "batch_size": 4,
        "validation_size": 2,
        "concurrency": 1,
    }
    return TrainConfig.model_validate({**base, **changes})


def _deps(tmp: Path, config: TrainConfig, provider: Any, log: CallLog) -> TrainingDeps:
    return TrainingDeps(
        task=TinyTask(),
        provider=provider,
        config=config,
        run=RunFolder(tmp),
        usage=lambda: {"roles": {"actor": {"calls": len(log.calls)}}, "total": {}},
    )


def test_a_refused_rollout_is_recorded_as_failed_scored_zero_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    log = CallLog()
    config = _config()
    asyncio.run(run_training(_deps(tmp_path, config, RefusingProvider(log), log)))
    run = RunFolder(tmp_path)
    refused = [r.rollout for r in run.rollouts.read() if r.question_id == "t0"]
    assert len(refused) == config.method.group_size  # type: ignore[union-attr]
    for rollout in refused:
        assert rollout.failed and rollout.reward == 0.0
        assert rollout.error is not None and "ModelRequestRefused" in rollout.error
    others = [r.rollout for r in run.rollouts.read() if r.question_id != "t0"]
    assert others and not any(r.failed for r in others)
    assert len(run.gate.read()) == 1  # the iteration finished


def test_sampled_validation_pairs_base_and_candidates_on_the_same_seeds(tmp_path: Path) -> None:
    log = CallLog()
    sampled = SamplingSettings.training(top_k=20).model_dump()
    config = _config(validation_sampling=sampled, batch_size=2)
    asyncio.run(run_training(_deps(tmp_path, config, CountingProvider(log), log)))
    run = RunFolder(tmp_path)
    seeds: dict[tuple[str, int], set[int | None]] = defaultdict(set)
    variants = set()
    for record in run.validation.read():
        seeds[(record.question_id, record.repeat)].add(record.rollout.seed)
        variants.add(record.variant)
    assert len(variants) >= 2  # the base and at least one candidate were validated
    assert all(len(s) == 1 and None not in s for s in seeds.values())
    (gate,) = run.gate.read()
    for decision in gate.decisions:
        assert decision.difference is not None and decision.standard_error is not None
        assert abs(decision.difference - (decision.candidate_score - decision.base_score)) < 1e-9
