"""Built-in tasks on the real benchmark files in ../shared/data (skipped where absent)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from grse_graph.tasks import load_task
from grse_graph.tasks.locomo import load_locomo

pytestmark = pytest.mark.shared_data


def test_locomo_published_split_and_test_counts(shared_data_dir: Path) -> None:
    task = load_task("locomo", shared_data_dir / "locomo" / "locomo10.json")
    conversations = {
        name: sorted({q.context["conversation_id"] for q in qs})
        for name, qs in task.splits().items()
    }
    assert conversations == {
        "train": ["conv-42", "conv-48"],
        "validation": ["conv-41", "conv-49"],
        "test": ["conv-26", "conv-30", "conv-43", "conv-44", "conv-47", "conv-50"],
    }
    counts = Counter(q.context["locomo_category"] for q in task.split("test"))
    assert dict(sorted(counts.items())) == {1: 156, 2: 179, 3: 54, 4: 453}
    assert all(isinstance(q.answer, str) and q.answer for q in task.split("test"))


def test_locomo_single_category_and_grep_on_real_conversation(shared_data_dir: Path) -> None:
    task = load_locomo(shared_data_dir / "locomo", category="temporal")
    assert len(task.split("test")) == 179
    question = task.split("test")[0]
    text = task.render_input(question)
    assert question.question in text
    conversation = task.conversation(question)
    assert conversation.speaker_a in text
    first_turn = conversation.sessions[0].turns[0]
    assert first_turn.text not in text
    (tool,) = task.agent_tools(question, "retriever", position=0)
    out = tool.invoke({"query": conversation.speaker_a})
    assert "showing 20 of" in out
    lines = [line for line in out.splitlines() if line.startswith("[D")]
    assert len(lines) == 20
    # Only what was said is searched: every hit names the speaker inside the turn's text.
    name = conversation.speaker_a.lower()
    assert all(name in line.split(" said, ", 1)[1].lower() for line in lines)
    date = conversation.sessions[0].date_time
    assert lines[0].startswith("[D1:") and f"({date})" in lines[0]


def test_hotpotqa_500_records_split_and_first_rendering(shared_data_dir: Path) -> None:
    path = shared_data_dir / "hotpotqa" / "hotpot_dev_distractor_500.json"
    task = load_task("hotpotqa", path)
    sizes = {name: len(qs) for name, qs in task.splits().items()}
    assert sizes == {"train": 100, "validation": 50, "test": 350}
    records = json.loads(path.read_text())
    first = records[0]
    question = task.split("train")[0]
    assert question.id == first["_id"]
    assert question.category == first["type"]
    rendered = task.render_input(question)
    # The official paragraphs: sentences concatenated as stored (they carry leading spaces).
    expected_blocks = [
        f"[Passage {i}] {title}\n" + "".join(sentences).strip()
        for i, (title, sentences) in enumerate(first["context"], start=1)
    ]
    assert len(expected_blocks) == 10
    assert rendered == "\n\n".join(expected_blocks) + f"\n\nQuestion: {first['question']}"
    assert [q.id for q in task.split("test")][:1] == [records[150]["_id"]]
