"""The bundled demo task: sizes, mix, answerability, rendering budget, tools and scoring."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from grse_graph.errors import TaskError
from grse_graph.tasks import DemoTask, TaskQuestion, load_task
from grse_graph.tasks.demo import load_demo
from grse_graph.tasks.rendering import passage_text

DATA = Path(__file__).parents[3] / "grse_graph" / "tasks" / "demo_data"


@pytest.fixture(scope="module")
def demo() -> DemoTask:
    return load_demo()


def all_questions(task: DemoTask) -> list[TaskQuestion]:
    return [q for qs in task.splits().values() for q in qs]


def test_split_sizes_and_mix(demo: DemoTask) -> None:
    sizes = {name: len(qs) for name, qs in demo.splits().items()}
    assert sizes == {"train": 24, "validation": 12, "test": 24}
    kinds = {
        name: Counter("memory" if demo.is_memory(q) else "multi-hop" for q in qs)
        for name, qs in demo.splits().items()
    }
    assert kinds["train"] == {"multi-hop": 16, "memory": 8}
    assert kinds["validation"] == {"multi-hop": 8, "memory": 4}
    assert kinds["test"] == {"multi-hop": 16, "memory": 8}
    # The first ten questions of a split already mix both kinds (for `--limit 10`).
    assert {demo.is_memory(q) for q in demo.split("test")[:10]} == {True, False}
    # ... and the first twelve hold every category once or more (the demo's test prefix).
    for name in ("validation", "test"):
        assert {q.category for q in demo.split(name)[:12]} == set(demo.categories)
    assert demo.kind == "mixed"


def test_categories_and_ids(demo: DemoTask) -> None:
    questions = all_questions(demo)
    assert len({q.id for q in questions}) == 60
    used = Counter(q.category for q in questions)
    assert set(used) == set(demo.categories)
    assert used["multi-hop:bridge"] + used["multi-hop:comparison"] == 40
    assert used["multi-hop:comparison"] >= 10
    assert sum(1 for q in questions if q.answer in ("yes", "no")) >= 6
    for name in ("multi-hop", "temporal", "open-domain", "single-hop"):
        assert used[f"memory:{name}"] >= 3


def test_multihop_answers_appear_in_supporting_passages(demo: DemoTask) -> None:
    for q in all_questions(demo):
        if demo.is_memory(q):
            continue
        titles = [p.title for p in q.passages]
        supporting = q.context["supporting_titles"]
        assert len(supporting) == 2 and set(supporting) <= set(titles), q.id
        assert 4 <= len(q.passages) <= 6, q.id
        if q.answer in ("yes", "no"):
            continue
        text = " ".join(
            p.title + " " + passage_text(p) for p in q.passages if p.title in supporting
        )
        assert q.answer.lower() in text.lower(), q.id


def test_memory_answers_are_grounded_in_evidence(demo: DemoTask) -> None:
    turns = {
        t.dia_id: t.text + " " + (t.caption or "")
        for s in demo.conversation.sessions
        for t in s.turns
    }
    for q in all_questions(demo):
        if not demo.is_memory(q):
            continue
        evidence = q.context["evidence"]
        assert evidence and all(e in turns for e in evidence), q.id
        text = " ".join(turns[e] for e in evidence).lower()
        category = q.context["locomo_category"]
        if category == 4:
            assert q.answer.lower().removeprefix("a ") in text, q.id
        elif category == 1:
            for part in q.answer.split(","):
                assert part.strip().lower() in text, (q.id, part)


def test_rendered_multihop_inputs_stay_short(demo: DemoTask) -> None:
    for q in all_questions(demo):
        words = len(re.findall(r"\S+", demo.render_input(q)))
        # ~1.4 tokens per word keeps every input well under 450 tokens.
        assert words <= 250, q.id


def test_memory_input_has_no_conversation(demo: DemoTask) -> None:
    q = next(q for q in demo.split("test") if demo.is_memory(q))
    text = demo.render_input(q)
    assert text.startswith(f"Question: {q.question}\n\n")
    assert "between Nadia and Piet" in text
    assert 'said, "' not in text
    assert demo.render_full_context(q).startswith("Below is a conversation between two people")


def test_tools_only_for_first_agent_on_memory_questions(demo: DemoTask) -> None:
    memory = next(q for q in demo.split("train") if demo.is_memory(q))
    multihop = next(q for q in demo.split("train") if not demo.is_memory(q))
    assert demo.agent_tools(multihop, "a1", position=0) == []
    assert demo.agent_tools(memory, "a2", position=1) == []
    (tool,) = demo.agent_tools(memory, "a1", position=0)
    assert "[D2:4]" in tool.invoke({"query": "parrot"})


def test_scoring_routes_by_question_kind(demo: DemoTask) -> None:
    memory = next(q for q in demo.split("train") if demo.is_memory(q))
    multihop = next(q for q in demo.split("train") if not demo.is_memory(q))
    assert set(demo.score(memory, memory.answer).metrics) == {"f1", "bleu"}
    assert demo.score(memory, memory.answer).reward == 1.0
    assert demo.score(multihop, multihop.answer).metrics == {"f1": 1.0, "em": 1.0}
    # A verbose answer loses reward: exact short spans matter.
    verbose = demo.score(multihop, f"The answer to the question is {multihop.answer}.")
    assert verbose.reward < 0.7


def test_registry_and_data_folder(tmp_path: Path) -> None:
    assert isinstance(load_task("demo"), DemoTask)
    with pytest.raises(TaskError, match="must be a directory"):
        load_task("demo", tmp_path / "missing")
    (tmp_path / "multihop.json").write_text((DATA / "multihop.json").read_text())
    with pytest.raises(TaskError, match=f"data file not found: {tmp_path / 'memory.json'}"):
        load_task("demo", tmp_path)


def test_bundled_data_is_small() -> None:
    assert sum(p.stat().st_size for p in DATA.glob("*.json")) < 100_000


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["questions"][0].update(category=5), r"question 0: category must be 1-4"),
        (lambda d: d["questions"][2].update(split="dev"), r"question 2: split 'dev' is not one"),
        (lambda d: d["questions"][1].pop("answer"), r"question 1: field 'answer' is missing"),
    ],
)
def test_bad_demo_memory_file(tmp_path: Path, edit: Any, message: str) -> None:
    (tmp_path / "multihop.json").write_text((DATA / "multihop.json").read_text())
    data = json.loads((DATA / "memory.json").read_text())
    edit(data)
    (tmp_path / "memory.json").write_text(json.dumps(data))
    with pytest.raises(TaskError, match=message):
        load_task("demo", tmp_path)


def test_unknown_passage_title_in_demo_multihop_file(tmp_path: Path) -> None:
    (tmp_path / "memory.json").write_text((DATA / "memory.json").read_text())
    data = json.loads((DATA / "multihop.json").read_text())
    data["questions"][3]["supporting"] = ["Atlantis"]
    (tmp_path / "multihop.json").write_text(json.dumps(data))
    with pytest.raises(TaskError, match=r"question 3: unknown passage titles \['Atlantis'\]"):
        load_task("demo", tmp_path)
