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


def tiny_llm(base_url: str) -> LLMConfig:
    """Every role at `base_url`, with caps that keep the 135M model fast (the 4k-token engine
    context must hold them)."""
    return load_config(
        env={},
        overrides={
            **{f"{role}.base_url": base_url for role in ("actor", "critic", "optimizer")},
            "actor.max_tokens": 64,
            "critic.max_tokens": 300,
            "optimizer.max_tokens": 300,
        },
    )


def tiny_grse_config(data: Path, batch_size: int) -> TrainConfig:
    """One GRSE iteration (G = 2) on the task file `data`, with payloads cut to fit the engine."""
    return TrainConfig(
        task="jsonl",
        data=str(data),
        iterations=1,
        method=GrseSettings(
            group_size=2,
            critic_max_tokens=300,
            payload_limits=PayloadLimits(
                step_output_chars=400, tool_result_chars=300, step_input_chars=600
            ),
        ),
        batch_size=batch_size,
        validation_size=2,
        concurrency=2,
    )
