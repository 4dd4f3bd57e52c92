"""The five-question JSONL task the engine tests train on: one-sentence contexts keep every
prompt short, so a run takes minutes on the small model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from grse_graph.llm import LLMConfig, load_config
from grse_graph.methods.grse.method import GrseSettings
from grse_graph.methods.grse.payload import PayloadLimits
from grse_graph.training.config import TrainConfig
from tests.fakeserver import SCRIPTED_JUDGES, FakeOpenAIServer

TinyRow = tuple[str, str, str, str]
"""(split, question, answer, context)."""

TINY_ROWS: tuple[TinyRow, ...] = (
    ("train", "What colour is the barn?", "red", "The barn on the hill is painted red."),
    ("train", "Which city hosts the fair?", "Oslo", "Every spring the fair is held in Oslo."),
    ("validation", "What does Mia play?", "violin", "Mia plays the violin in a quartet."),
    ("validation", "How many cats live here?", "three", "Three cats live in this house."),
    ("test", "What is the dog's name?", "Rex", "The dog is called Rex."),
)


def write_tiny_task(path: Path, rows: Sequence[TinyRow] = TINY_ROWS) -> Path:
    """`rows` as a `jsonl` task file at `path` (ids q0, q1, ...); returns `path`."""
    path.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "split": s, "question": q, "answer": a, "context": c}) + "\n"
            for i, (s, q, a, c) in enumerate(rows)
        ),
        encoding="utf-8",
    )
    return path


def tiny_llm(actor_url: str, scripted: FakeOpenAIServer) -> LLMConfig:
    """The actor at `actor_url` with a cap that keeps the 135M model fast, the critic and the
    optimizer (`SCRIPTED_JUDGES`) at the scripted server, whose replies parse: the small model
    cannot fill a critique within any cap a test can afford."""
    return load_config(
        env={},
        overrides={
            "actor.base_url": actor_url,
            "actor.max_tokens": 64,
            **{f"{role}.base_url": scripted.base_url(role) for role in SCRIPTED_JUDGES},
            **{f"{role}.model": "fake" for role in SCRIPTED_JUDGES},
        },
    )


def tiny_grse_config(data: Path, batch_size: int) -> TrainConfig:
    """One GRSE iteration (G = 2) on the task file `data`, with the critic's payloads cut short."""
    return TrainConfig(
        task="jsonl",
        data=str(data),
        iterations=1,
        method=GrseSettings(
            group_size=2,
            payload_limits=PayloadLimits(
                step_output_chars=400, tool_result_chars=300, step_input_chars=600
            ),
        ),
        batch_size=batch_size,
        validation_size=2,
        concurrency=2,
    )
