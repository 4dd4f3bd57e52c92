"""The five-question JSONL task the engine tests train on: one-sentence contexts keep every
prompt short, so a run takes minutes on the small model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

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
