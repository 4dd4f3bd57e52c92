"""The LoCoMo-10 task: conversation-memory questions answered through a grep tool.

Split by conversation: the sample ids in file order are shuffled with `random.Random(seed)`
(seed 42); the first `train_conversations` are train, the next `validation_conversations`
validation, the rest test. Categories 1-4 are kept (5, adversarial, is excluded).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from grse_graph.errors import TaskError
from grse_graph.metrics.locomo import CATEGORY_NAMES
from grse_graph.tasks.base import ScoredAnswer, TaskKind, TaskQuestion
from grse_graph.tasks.conversation import Conversation, parse_conversation
from grse_graph.tasks.grep_tool import ConversationIndex, make_grep_tool
from grse_graph.tasks.io import read_json, resolve_data_file
from grse_graph.tasks.scoring import locomo_category_of, score_locomo
from grse_graph.tasks.splits import SplitTable, SplitTableTask

LOCOMO_FILE = "locomo10.json"
LOCOMO_CATEGORY_NAMES: dict[int, str] = dict(CATEGORY_NAMES)
# The LoCoMo full-context protocol appends this to temporal (category 2) questions.
TEMPORAL_HINT = " Use DATE of CONVERSATION to answer with an approximate date."


def parse_categories(value: object, *, task_name: str) -> list[int]:
    """Category option -> sorted category numbers.

    Accepts None / "mixed" / "all" (all of 1-4), a number or name ("temporal"), or a list of
    those.
    """
    if value is None or value in ("mixed", "all"):
        return sorted(LOCOMO_CATEGORY_NAMES)
    items = value if isinstance(value, list | tuple) else [value]
    by_name = {name: number for number, name in LOCOMO_CATEGORY_NAMES.items()}
    chosen: set[int] = set()
    for item in items:
        if isinstance(item, str) and item.strip().isdigit():
            item = int(item.strip())
        if isinstance(item, int) and not isinstance(item, bool) and item in LOCOMO_CATEGORY_NAMES:
            chosen.add(item)
        elif isinstance(item, str) and item.strip().lower() in by_name:
            chosen.add(by_name[item.strip().lower()])
        else:
            raise TaskError(
                f"task '{task_name}': unknown category {item!r} (use 1-4, "
                f"{', '.join(LOCOMO_CATEGORY_NAMES.values())} or mixed)"
            )
    return sorted(chosen)


@functools.cache
def category_prompt(category: int) -> str:
    """The environment's task prompt for a LoCoMo category (GRSE App. F), from
    `grse_graph/tasks/prompts/locomo_<name>.md`."""
    name = LOCOMO_CATEGORY_NAMES[category]
    path = resources.files("grse_graph.tasks").joinpath("prompts", f"locomo_{name}.md")
    return " ".join(path.read_text(encoding="utf-8").split())


def render_memory_question(question: TaskQuestion, *, show_category: bool = True) -> str:
    """The first agent's input: the question, its category with the category's task prompt
    (unless `show_category` is off), who talks, and how to reach the conversation; never the
    conversation text."""
    speakers = question.context.get("speakers") or []
    who = " and ".join(str(s) for s in speakers) if speakers else "two people"
    parts = [f"Question: {question.question}"]
    category = question.context.get("locomo_category")
    if show_category and category in LOCOMO_CATEGORY_NAMES:
        parts.append(f"Category: {LOCOMO_CATEGORY_NAMES[category]}\n{category_prompt(category)}")
    parts.append(
        f"The answer is in a long multi-session conversation between {who}. The conversation "
        "is not shown here: search it with the grep tool."
    )
    return "\n\n".join(parts)


def full_context_question(question: TaskQuestion) -> str:
    """The question as the LoCoMo full-context protocol asks it: category-2 (temporal)
    questions carry the benchmark's `TEMPORAL_HINT`."""
    if question.context.get("locomo_category") == 2:
        return question.question + TEMPORAL_HINT
    return question.question


class LocomoTask(SplitTableTask):
    """LoCoMo-10 questions of categories 1-4, split by conversation."""

    name = "locomo"
    kind: TaskKind = "conversation"

    def __init__(
        self,
        conversations: Mapping[str, Conversation],
        splits: SplitTable,
        categories: Sequence[int],
        *,
        max_grep_calls: int = 3,
        max_grep_results: int = 20,
        tool_agent: str = "retriever",
        show_category: bool = True,
    ) -> None:
        self._conversations = dict(conversations)
        self._indexes = {cid: ConversationIndex.of(c) for cid, c in self._conversations.items()}
        super().__init__(splits)
        self.categories = [LOCOMO_CATEGORY_NAMES[c] for c in categories]
        self.max_grep_calls = max_grep_calls
        self.max_grep_results = max_grep_results
        self.tool_agent = tool_agent
        self.show_category = show_category

    def conversation(self, question: TaskQuestion) -> Conversation:
        """The conversation a question is about."""
        cid = question.context.get("conversation_id")
        if not isinstance(cid, str) or cid not in self._conversations:
            raise TaskError(f"question {question.id}: unknown conversation {cid!r}")
        return self._conversations[cid]

    def render_input(self, question: TaskQuestion) -> str:
        """Question, category and its task prompt, speaker names; the conversation is reached
        through the grep tool."""
        return render_memory_question(question, show_category=self.show_category)

    def render_full_context(self, question: TaskQuestion) -> str:
        """The whole conversation in the LoCoMo full-context layout."""
        return self.conversation(question).render_full_context()

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]:
        """A fresh grep tool (own 3-call budget) for the retriever; nothing for other agents.

        The retriever is the agent at `position` 0, or, when no position is given, the agent
        named `tool_agent`.
        """
        is_retriever = position == 0 if position is not None else agent_name == self.tool_agent
        if not is_retriever:
            return []
        conversation = self.conversation(question)
        return [
            make_grep_tool(
                conversation,
                max_calls=self.max_grep_calls,
                max_results=self.max_grep_results,
                index=self._indexes[conversation.conversation_id],
            )
        ]

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        """(category F1 + smoothed BLEU) / 2; metrics f1 and bleu."""
        return score_locomo(prediction, question.answer, locomo_category_of(question))


def parse_locomo_questions(
    sample: Mapping[str, Any], conversation: Conversation, categories: Sequence[int], where: str
) -> list[TaskQuestion]:
    """Questions of the chosen categories from one sample's `qa` list.

    Ids are `<sample_id>-q<index in qa>` (safe in file names); integer answers (years,
    counts) become strings.
    """
    qa = sample.get("qa")
    if not isinstance(qa, list):
        raise TaskError(f"{where}: field 'qa' is missing or not a list")
    questions: list[TaskQuestion] = []
    for index, item in enumerate(qa):
        item_where = f"{where} qa[{index}]"
        if not isinstance(item, Mapping):
            raise TaskError(f"{item_where}: must be an object")
        category = item.get("category")
        if isinstance(category, bool) or not isinstance(category, int):
            raise TaskError(f"{item_where}: field 'category' is missing or not an integer")
        if category not in categories:
            continue
        text = item.get("question")
        if not isinstance(text, str) or not text.strip():
            raise TaskError(f"{item_where}: field 'question' is missing or empty")
        answer = item.get("answer")
        if isinstance(answer, bool) or not isinstance(answer, str | int | float):
            raise TaskError(f"{item_where}: field 'answer' is missing or not a string")
        evidence = item.get("evidence") or []
        questions.append(
            TaskQuestion(
                id=f"{conversation.conversation_id}-q{index}",
                question=text,
                answer=str(answer),
                category=LOCOMO_CATEGORY_NAMES[category],
                context={
                    "conversation_id": conversation.conversation_id,
                    "speakers": [conversation.speaker_a, conversation.speaker_b],
                    "locomo_category": category,
                    "evidence": [str(e) for e in evidence] if isinstance(evidence, list) else [],
                },
            )
        )
    return questions


def conversation_split(
    sample_ids: Sequence[str], seed: int, train: int, validation: int
) -> dict[str, list[str]]:
    """The published split: shuffle ids (file order) with `random.Random(seed)`, then cut.

    Inside a split, conversations keep file order so question order is easy to follow.
    """
    shuffled = list(sample_ids)
    random.Random(seed).shuffle(shuffled)
    cuts = {
        "train": set(shuffled[:train]),
        "validation": set(shuffled[train : train + validation]),
        "test": set(shuffled[train + validation :]),
    }
    return {name: [cid for cid in sample_ids if cid in chosen] for name, chosen in cuts.items()}


def load_locomo(
    data: Path | None,
    *,
    category: object = None,
    seed: int = 42,
    train_conversations: int = 2,
    validation_conversations: int = 2,
    max_grep_calls: int = 3,
    max_grep_results: int = 20,
    tool_agent: str = "retriever",
    show_category: bool = True,
) -> LocomoTask:
    """Load `locomo10.json` (a file path, or a directory holding it).

    `category` keeps one category (or a list; None / "mixed": all of 1-4). The conversation
    split does not depend on it: a category's splits are the published split's conversations
    restricted to that category, so open-domain has 2/2/5 conversations (conv-30 has no
    open-domain question). `show_category` False hides the category and its task prompt from
    the agents (a setting: the paper shows them).
    """
    path = resolve_data_file(data, LOCOMO_FILE, task_name="locomo")
    raw = read_json(path, task_name="locomo")
    if not isinstance(raw, list) or not raw:
        raise TaskError(f"locomo: {path} must hold a non-empty JSON list of samples")
    categories = parse_categories(category, task_name="locomo")
    conversations: dict[str, Conversation] = {}
    by_conversation: dict[str, list[TaskQuestion]] = {}
    for position, sample in enumerate(raw):
        where = f"{path} sample {position}"
        if not isinstance(sample, Mapping):
            raise TaskError(f"{where}: must be an object")
        sample_id = sample.get("sample_id")
        if not isinstance(sample_id, str) or not sample_id:
            raise TaskError(f"{where}: field 'sample_id' is missing or not a string")
        if sample_id in conversations:
            raise TaskError(f"{where}: duplicate sample_id '{sample_id}'")
        where = f"{path} sample {sample_id}"
        conversation = parse_conversation(sample_id, sample.get("conversation"), where)
        conversations[sample_id] = conversation
        by_conversation[sample_id] = parse_locomo_questions(sample, conversation, categories, where)
    if train_conversations < 0 or validation_conversations < 0:
        raise TaskError("locomo: conversation counts per split must be >= 0")
    ids = conversation_split(
        list(conversations), seed, train_conversations, validation_conversations
    )
    splits = SplitTable(
        "locomo",
        {name: [q for cid in cids for q in by_conversation[cid]] for name, cids in ids.items()},
    )
    return LocomoTask(
        conversations,
        splits,
        categories,
        max_grep_calls=max_grep_calls,
        max_grep_results=max_grep_results,
        tool_agent=tool_agent,
        show_category=show_category,
    )
