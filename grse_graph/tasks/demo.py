"""The demo task: invented multi-hop passages and an invented conversation, shipped in the package.

`demo_data/multihop.json` holds a pool of short passages (by title) and 40 two-hop questions
(bridge and comparison, including yes/no) scored like HotpotQA; `demo_data/memory.json` holds one
LoCoMo-format conversation and 20 memory questions (LoCoMo categories 1-4) answered through the
grep tool and scored like LoCoMo. Splits are fixed in the files: 24 train / 12 validation /
24 test, each interleaving two multi-hop questions with one memory question, categories taking
turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from grse_graph.errors import TaskError
from grse_graph.tasks.base import SPLIT_NAMES, Passage, ScoredAnswer, TaskKind, TaskQuestion
from grse_graph.tasks.conversation import Conversation, parse_conversation
from grse_graph.tasks.grep_tool import ConversationIndex, make_grep_tool
from grse_graph.tasks.io import read_json
from grse_graph.tasks.locomo import LOCOMO_CATEGORY_NAMES, render_memory_question
from grse_graph.tasks.rendering import render_passage_question, render_passages
from grse_graph.tasks.scoring import score_with
from grse_graph.tasks.splits import SplitTable, SplitTableTask

MULTIHOP_FILE = "multihop.json"
MEMORY_FILE = "memory.json"
DEMO_CATEGORIES = [
    "multi-hop:bridge",
    "multi-hop:comparison",
    *(f"memory:{name}" for name in LOCOMO_CATEGORY_NAMES.values()),
]


class DemoTask(SplitTableTask):
    """Mixed task: passage questions (no tools) and memory questions (grep for agent 1)."""

    name = "demo"
    kind: TaskKind = "mixed"

    def __init__(
        self,
        conversation: Conversation,
        splits: SplitTable,
        *,
        max_grep_calls: int = 3,
        max_grep_results: int = 20,
        tool_agent: str = "retriever",
    ) -> None:
        self._conversation = conversation
        self._index = ConversationIndex.of(conversation)
        super().__init__(splits)
        self.categories = list(DEMO_CATEGORIES)
        self.max_grep_calls = max_grep_calls
        self.max_grep_results = max_grep_results
        self.tool_agent = tool_agent

    @property
    def conversation(self) -> Conversation:
        """The invented conversation the memory questions are about."""
        return self._conversation

    @staticmethod
    def is_memory(question: TaskQuestion) -> bool:
        """True for a conversation-memory question."""
        return "conversation_id" in question.context

    def render_input(self, question: TaskQuestion) -> str:
        """Passages + question, or (memory) the question and how to search the conversation."""
        if self.is_memory(question):
            return render_memory_question(question)
        return render_passage_question(question.question, question.passages)

    def render_full_context(self, question: TaskQuestion) -> str:
        """The passages, or the whole conversation for a memory question."""
        if self.is_memory(question):
            return self._conversation.render_full_context()
        return render_passages(question.passages)

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]:
        """A fresh grep tool for the first agent on memory questions; otherwise none."""
        if not self.is_memory(question):
            return []
        is_retriever = position == 0 if position is not None else agent_name == self.tool_agent
        if not is_retriever:
            return []
        return [
            make_grep_tool(
                self._conversation,
                max_calls=self.max_grep_calls,
                max_results=self.max_grep_results,
                index=self._index,
            )
        ]

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        """HotpotQA F1 for multi-hop questions, (F1 + BLEU) / 2 for memory questions."""
        metric = question.context.get("metric")
        if not isinstance(metric, str):
            raise TaskError(f"demo question {question.id} has no metric")
        return score_with(metric, question, prediction)


def _str(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise TaskError(f"{where}: field '{key}' is missing or not a string")
    return value


def _items(raw: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    items = raw.get("questions")
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise TaskError(f"{where}: 'questions' must be a list of objects")
    return items


def _titles(item: Mapping[str, Any], key: str, where: str) -> list[str]:
    titles = item.get(key)
    if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
        raise TaskError(f"{where}: field '{key}' must be a list of passage titles")
    return titles


def _split_of(item: Mapping[str, Any], where: str) -> str:
    split = _str(item, "split", where)
    if split not in SPLIT_NAMES:
        raise TaskError(f"{where}: split '{split}' is not one of {', '.join(SPLIT_NAMES)}")
    return split


def _multihop_questions(raw: Any, where: str) -> dict[str, list[TaskQuestion]]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("passages"), Mapping):
        raise TaskError(f"{where}: expected an object with 'passages' and 'questions'")
    pool: dict[str, Passage] = {}
    for title, sentences in raw["passages"].items():
        if not isinstance(sentences, list) or not all(isinstance(x, str) for x in sentences):
            raise TaskError(f"{where}: passage '{title}' must be a list of sentences")
        pool[str(title)] = Passage(title=str(title), sentences=sentences)
    by_split: dict[str, list[TaskQuestion]] = {name: [] for name in SPLIT_NAMES}
    for index, item in enumerate(_items(raw, where)):
        item_where = f"{where} question {index}"
        titles = _titles(item, "passages", item_where)
        supporting = _titles(item, "supporting", item_where)
        missing = [t for t in [*titles, *supporting] if t not in pool]
        if missing:
            raise TaskError(f"{item_where}: unknown passage titles {missing}")
        qtype = _str(item, "type", item_where)
        by_split[_split_of(item, item_where)].append(
            _question(
                item,
                item_where,
                f"multi-hop:{qtype}",
                {"metric": "hotpotqa", "supporting_titles": supporting},
                passages=[pool[t] for t in titles],
            )
        )
    return by_split


def _question(
    item: Mapping[str, Any],
    where: str,
    category: str,
    context: dict[str, Any],
    passages: list[Passage] | None = None,
) -> TaskQuestion:
    """A demo question: its id, question and answer read from `item`, the rest as given."""
    return TaskQuestion(
        id=_str(item, "id", where),
        question=_str(item, "question", where),
        answer=_str(item, "answer", where),
        category=category,
        passages=passages or [],
        context=context,
    )


def _memory_questions(raw: Any, where: str) -> tuple[Conversation, dict[str, list[TaskQuestion]]]:
    if not isinstance(raw, Mapping):
        raise TaskError(f"{where}: expected an object with 'conversation' and 'questions'")
    cid = _str(raw, "conversation_id", where)
    conversation = parse_conversation(cid, raw.get("conversation"), where)
    by_split: dict[str, list[TaskQuestion]] = {name: [] for name in SPLIT_NAMES}
    for index, item in enumerate(_items(raw, where)):
        item_where = f"{where} question {index}"
        category = item.get("category")
        if category not in LOCOMO_CATEGORY_NAMES:
            raise TaskError(f"{item_where}: category must be 1-4, got {category!r}")
        by_split[_split_of(item, item_where)].append(
            _question(
                item,
                item_where,
                f"memory:{LOCOMO_CATEGORY_NAMES[category]}",
                {
                    "metric": "locomo",
                    "conversation_id": cid,
                    "speakers": [conversation.speaker_a, conversation.speaker_b],
                    "locomo_category": category,
                    "evidence": list(item.get("evidence") or []),
                },
            )
        )
    return conversation, by_split


def by_category_round_robin(questions: list[TaskQuestion]) -> list[TaskQuestion]:
    """One question of each category in turn (categories in order of first appearance)."""
    queues: dict[str | None, list[TaskQuestion]] = {}
    for question in questions:
        queues.setdefault(question.category, []).append(question)
    out: list[TaskQuestion] = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                out.append(queue.pop(0))
    return out


def interleave(multihop: list[TaskQuestion], memory: list[TaskQuestion]) -> list[TaskQuestion]:
    """Two multi-hop questions then one memory question, repeated; leftovers at the end. Within
    each kind the categories take turns.

    So that `--limit N` on any split still mixes both kinds and their categories.
    """
    out: list[TaskQuestion] = []
    mh, mem = by_category_round_robin(multihop), by_category_round_robin(memory)
    while mh or mem:
        out.extend(mh[:2])
        del mh[:2]
        out.extend(mem[:1])
        del mem[:1]
    return out


def load_demo(
    data: Path | None = None,
    *,
    max_grep_calls: int = 3,
    max_grep_results: int = 20,
    tool_agent: str = "retriever",
) -> DemoTask:
    """Load the bundled demo task, or the same two files from the directory `data`."""
    if data is None:
        root = resources.files("grse_graph.tasks").joinpath("demo_data")
        multihop_path = Path(str(root.joinpath(MULTIHOP_FILE)))
        memory_path = Path(str(root.joinpath(MEMORY_FILE)))
    else:
        if not Path(data).is_dir():
            raise TaskError(
                f"demo: --data must be a directory holding {MULTIHOP_FILE} and "
                f"{MEMORY_FILE}: {data}"
            )
        multihop_path = Path(data) / MULTIHOP_FILE
        memory_path = Path(data) / MEMORY_FILE
    multihop = _multihop_questions(read_json(multihop_path, task_name="demo"), str(multihop_path))
    conversation, memory = _memory_questions(
        read_json(memory_path, task_name="demo"), str(memory_path)
    )
    splits = SplitTable(
        "demo", {name: interleave(multihop[name], memory[name]) for name in SPLIT_NAMES}
    )
    ids = [q.id for q in splits.all_questions()]
    if len(ids) != len(set(ids)):
        raise TaskError("demo: question ids are not unique")
    return DemoTask(
        conversation,
        splits,
        max_grep_calls=max_grep_calls,
        max_grep_results=max_grep_results,
        tool_agent=tool_agent,
    )
