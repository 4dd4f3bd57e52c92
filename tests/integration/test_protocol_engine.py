"""The paper's LoCoMo protocol on the embedded engine (slow; `-m engine`): `grse eval
--category temporal` (the default model: SmolLM2's chat template has no tools, so the server
cannot force its grep call) and `grse baseline --category temporal` (the small model) on the
real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grse_graph.cli import build_app

pytestmark = [pytest.mark.engine, pytest.mark.shared_data]

# The small model rambles; a short cap keeps the test fast without changing the code path.
TEST_MAX_TOKENS = 96


def roles_toml(path: Path, engine_url: str | None) -> Path:
    where = f'base_url = "{engine_url}"\n' if engine_url else ""
    path.write_text(f"[actor]\n{where}max_tokens = {TEST_MAX_TOKENS}\n")
    return path


def predictions(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


def test_eval_temporal_category_with_the_papers_team(shared_data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    data = shared_data_dir / "locomo" / "locomo10.json"
    config = roles_toml(tmp_path / "roles.toml", None)
    args = ["eval", "--task", "locomo", "--data", str(data), "--category", "temporal"]
    args += ["--limit", "2", "--config", str(config), "--out", str(out), "--model", "default"]
    build_app()(args, standalone_mode=False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["questions"] == 2
    assert set(summary["per_category"]) == {"temporal"}
    for record in predictions(out):
        rollout = record["rollout"]
        assert isinstance(rollout, dict)
        retriever, reasoner = rollout["steps"]
        assert "Category: temporal" in retriever["input"]
        assert retriever["tool_calls"], "the first grep call is forced"
        # The reasoner reads the retriever's hand-off, not the raw grep results.
        for call in retriever["tool_calls"]:
            assert call["result"] not in reasoner["input"]
        assert retriever["output"] in reasoner["input"]


def test_baseline_is_one_user_message_without_system_prompt(
    small_engine_url: str, shared_data_dir: Path, tmp_path: Path
) -> None:
    # The full-context prompt (a whole conversation, over 10k tokens) does not fit the small
    # engine's context; its temporal instruction is covered by the unit tests.
    out = tmp_path / "baseline"
    data = shared_data_dir / "locomo" / "locomo10.json"
    config = roles_toml(tmp_path / "roles.toml", small_engine_url)
    args = ["baseline", "--method", "cot", "--task", "locomo", "--data", str(data)]
    args += ["--category", "temporal", "--limit", "1", "--config", str(config), "--out", str(out)]
    build_app()(args, standalone_mode=False)
    (record,) = predictions(out)
    assert not record["failed"], record["error"]
    rollout = record["rollout"]
    assert isinstance(rollout, dict)
    (step,) = rollout["steps"]
    assert step["system_prompt"] == ""
    assert step["input"].startswith("Question: ")
    assert "Think step by step" in step["input"]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["per_category"]) == {"temporal"}
