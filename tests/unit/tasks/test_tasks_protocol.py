"""The paper's LoCoMo protocol: per-category loading and splits, category-aware agent inputs,
official scoring of cited answers, task-aware training defaults, and `--category` on the
commands."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from grse_graph.cli import build_app
from grse_graph.errors import TaskError
from grse_graph.llm.provider import SamplingSettings
from grse_graph.metrics import carries_citation
from grse_graph.tasks import load_task
from grse_graph.tasks.protocol import protocol_defaults, with_protocol_defaults
from grse_graph.training.config import TrainConfig
from tests.fakeserver import FakeOpenAIServer

MINI = Path(__file__).parents[2] / "fixtures" / "tasks" / "locomo_mini.json"


def test_load_task_takes_a_category_for_locomo_only() -> None:
    task = load_task("locomo", MINI, category="temporal", train_conversations=1)
    assert task.categories == ["temporal"]
    assert {q.context["locomo_category"] for qs in task.splits().values() for q in qs} == {2}
    assert (
        load_task("locomo", MINI, category="mixed").categories
        == load_task("locomo", MINI).categories
    )
    with pytest.raises(TaskError, match="task 'demo' has no categories to choose"):
        load_task("demo", category="temporal")


def test_agents_see_the_question_category() -> None:
    task = load_task("locomo", MINI, train_conversations=1, validation_conversations=1)
    inputs = {q.id: task.render_input(q) for q in task.split("test")}
    assert "Category: temporal" in inputs["conv-a-q1"]
    assert "Category: open-domain" in inputs["conv-a-q5"]
    assert "Category: multi-hop" in inputs["conv-a-q4"]


@pytest.mark.parametrize(
    ("prediction", "cited"),
    [
        ("Noodle [D1:1]", True),
        ("7 May 2023 (D2:4, D3:1).", True),
        ("[D1:3; D4:5] cat", True),
        ("D1:2 Noodle", True),
        ("Noodle", False),
        ("D-Day 1:2", False),
    ],
)
def test_answers_carrying_dialogue_id_citations_are_recognised(
    prediction: str, cited: bool
) -> None:
    assert carries_citation(prediction) is cited


def test_citations_are_scored_as_the_official_scorer_scores_them() -> None:
    task = load_task("locomo", MINI, train_conversations=1, validation_conversations=1)
    question = next(q for q in task.split("test") if q.id == "conv-a-q0")
    assert task.score(question, "Noodle").reward == 1.0
    assert task.score(question, "Noodle [D1:1]").reward < 1.0


def test_task_aware_protocol_defaults() -> None:
    assert protocol_defaults("locomo", "temporal").batch_size == 24
    assert protocol_defaults("locomo", None).batch_size == 32
    assert protocol_defaults("locomo", "mixed").batch_size == 32
    assert protocol_defaults("locomo", "temporal").library_limit == 4
    assert protocol_defaults("locomo", "temporal").validation_decoding == "greedy"
    assert protocol_defaults("hotpotqa").validation_decoding == "training"
    hotpot = TrainConfig.model_validate(
        with_protocol_defaults({"task": "hotpotqa"}, training_top_k=64)
    )
    assert hotpot.validation_sampling == SamplingSettings.training(top_k=64)
    assert hotpot.training_sampling.top_k == 64
    assert hotpot.batch_size == 20
    locomo = TrainConfig.model_validate(
        with_protocol_defaults({"task": "locomo", "category": "temporal"}, training_top_k=20)
    )
    assert locomo.validation_sampling == SamplingSettings.greedy()
    assert (locomo.batch_size, locomo.library_limit) == (24, 4)
    mixed = with_protocol_defaults({"task": "locomo"}, training_top_k=20)
    assert mixed["batch_size"] == 32


def test_explicit_values_win_over_protocol_defaults() -> None:
    table = {
        "task": "hotpotqa",
        "batch_size": 8,
        "training_sampling": {"temperature": 0.7, "top_p": 0.9, "top_k": 5},
    }
    config = TrainConfig.model_validate(with_protocol_defaults(table, training_top_k=64))
    assert config.batch_size == 8
    # HotpotQA validation samples with the run's own training parameters.
    assert config.validation_sampling == config.training_sampling
    assert config.training_sampling.top_k == 5


# --- the real LoCoMo-10 file (skipped visibly where ../shared/data is absent) ---------------


@pytest.mark.shared_data
def test_open_domain_uses_the_published_split_with_five_test_conversations(
    shared_data_dir: Path,
) -> None:
    task = load_task("locomo", shared_data_dir / "locomo" / "locomo10.json", category="open-domain")
    conversations = {
        name: sorted({q.context["conversation_id"] for q in qs})
        for name, qs in task.splits().items()
    }
    assert conversations == {
        "train": ["conv-42", "conv-48"],
        "validation": ["conv-41", "conv-49"],
        "test": ["conv-26", "conv-43", "conv-44", "conv-47", "conv-50"],
    }
    assert len(task.split("test")) == 54


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("category", "test_count"),
    [("multi-hop", 156), ("temporal", 179), ("open-domain", 54), ("single-hop", 453)],
)
def test_per_category_test_counts(shared_data_dir: Path, category: str, test_count: int) -> None:
    task = load_task("locomo", shared_data_dir / "locomo" / "locomo10.json", category=category)
    assert len(task.split("test")) == test_count
    assert task.categories == [category]


@pytest.mark.shared_data
def test_grse_eval_category_temporal_reports_the_179_test_questions(
    shared_data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "eval"
    with FakeOpenAIServer(max_requests=2000, lifetime_s=300) as server:
        roles = tmp_path / "roles.toml"
        roles.write_text(
            "".join(
                f'[{role}]\nbase_url = "{server.base_url(role)}"\nmodel = "fake"\n'
                "max_retries = 0\nconcurrency = 8\n"
                for role in ("actor", "critic", "optimizer")
            )
        )
        build_app()(
            [
                "eval",
                "--task",
                "locomo",
                "--data",
                str(shared_data_dir / "locomo" / "locomo10.json"),
                "--category",
                "temporal",
                "--config",
                str(roles),
                "--out",
                str(out),
            ],
            standalone_mode=False,
        )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["questions"] == 179
    assert summary["finished"] == 179
    assert set(summary["per_category"]) == {"temporal"}
    lines = (out / "predictions.jsonl").read_text().splitlines()
    categories = Counter(json.loads(line)["category"] for line in lines)
    assert categories == Counter({"temporal": 179})


def test_grse_train_starts_from_an_init_library_and_fills_protocol_defaults(
    tmp_path: Path,
) -> None:
    from grse_graph.skills import Skill, SkillLibrary
    from grse_graph.training.run_folder import RunFolder

    planted = Skill.build(name="planted", description="A planted skill.", body="Do X.")
    SkillLibrary.build("reasoner", [planted]).save(tmp_path / "planted")
    run_dir = tmp_path / "run"
    with FakeOpenAIServer(max_requests=2000, lifetime_s=300) as server:
        config = tmp_path / "grse.toml"
        config.write_text(
            "".join(
                f'[{role}]\nbase_url = "{server.base_url(role)}"\nmodel = "gemma-3-4b-it"\n'
                "max_retries = 0\n"
                for role in ("actor", "critic", "optimizer")
            )
        )
        args = ["train", "--task", "demo", "--iterations", "1", "--group-size", "1"]
        args += ["--batch-size", "1", "--validation-size", "1", "--config", str(config)]
        args += ["--init-library", f"reasoner={tmp_path / 'planted'}", "--out", str(run_dir)]
        build_app()(args, standalone_mode=False)
    stored = RunFolder(run_dir).read_config()
    assert stored.init_libraries == {"reasoner": str((tmp_path / "planted").resolve())}
    assert stored.training_sampling.top_k == 64  # the actor is a Gemma model
    assert stored.validation_sampling == SamplingSettings.greedy()
    assert stored.batch_size == 1  # the flag wins over the protocol default
    start = RunFolder(run_dir).path / "libraries" / "iter_0" / "reasoner"
    assert (start / "planted" / "SKILL.md").is_file()
