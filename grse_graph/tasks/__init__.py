"""Tasks: the protocol (questions, splits, tools, rendering, reward) and the built-in tasks."""

from grse_graph.errors import TaskError
from grse_graph.tasks.base import SPLIT_NAMES, Passage, ScoredAnswer, Task, TaskKind, TaskQuestion
from grse_graph.tasks.conversation import Conversation, Session, Turn, render_turn
from grse_graph.tasks.demo import DemoTask, load_demo
from grse_graph.tasks.grep_tool import GREP_TOOL_NAME, ConversationIndex, make_grep_tool
from grse_graph.tasks.hotpotqa import HotpotQATask, load_hotpotqa, record_from_hf_row
from grse_graph.tasks.jsonl import JsonlTask, load_jsonl
from grse_graph.tasks.locomo import LOCOMO_CATEGORY_NAMES, LocomoTask, load_locomo
from grse_graph.tasks.registry import TASK_NAMES, load_task, task_options
from grse_graph.tasks.rendering import render_passages

__all__ = [
    "GREP_TOOL_NAME",
    "LOCOMO_CATEGORY_NAMES",
    "SPLIT_NAMES",
    "TASK_NAMES",
    "Conversation",
    "ConversationIndex",
    "DemoTask",
    "HotpotQATask",
    "JsonlTask",
    "LocomoTask",
    "Passage",
    "ScoredAnswer",
    "Session",
    "Task",
    "TaskError",
    "TaskKind",
    "TaskQuestion",
    "Turn",
    "load_demo",
    "load_hotpotqa",
    "load_jsonl",
    "load_locomo",
    "load_task",
    "make_grep_tool",
    "record_from_hf_row",
    "render_passages",
    "render_turn",
    "task_options",
]
