"""Multi-session conversations (LoCoMo format), their turn rendering and full-context text."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from grse_graph.errors import TaskError

_SESSION_KEY = re.compile(r"^session_(\d+)$")

# The LoCoMo full-context protocol (task_eval of the benchmark) opens with this sentence.
FULL_CONTEXT_HEADER = (
    "Below is a conversation between two people: {a} and {b}. The conversation takes place over "
    "multiple days and the date of each conversation is written at the beginning of the "
    "conversation."
)


class Turn(BaseModel):
    """One dialogue turn; `caption` is the image caption when the speaker shared an image."""

    model_config = ConfigDict(frozen=True)

    dia_id: str
    speaker: str
    text: str
    caption: str | None = None


class Session(BaseModel):
    """One dated session of a conversation."""

    model_config = ConfigDict(frozen=True)

    number: int
    date_time: str
    turns: tuple[Turn, ...]


class Conversation(BaseModel):
    """A two-speaker multi-session conversation."""

    model_config = ConfigDict(frozen=True)

    conversation_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]

    def rendered_turns(self) -> list[str]:
        """Every turn as a search line, in conversation order."""
        return [
            render_turn(turn, session.date_time)
            for session in self.sessions
            for turn in session.turns
        ]

    def render_full_context(self) -> str:
        """The whole conversation in the LoCoMo full-context layout (header, then per session
        `DATE:` and `CONVERSATION:` blocks of `Speaker said, "text"` lines)."""
        parts = [FULL_CONTEXT_HEADER.format(a=self.speaker_a, b=self.speaker_b)]
        for session in self.sessions:
            lines = [_said(turn) for turn in session.turns]
            parts.append(f"DATE: {session.date_time}\nCONVERSATION:\n" + "\n".join(lines))
        return "\n\n".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _said(turn: Turn) -> str:
    line = f'{turn.speaker} said, "{_one_line(turn.text)}"'
    if turn.caption:
        line += f" and shared {_one_line(turn.caption)}"
    return line


def searchable_text(turn: Turn) -> str:
    """What the grep tool searches in a turn: what was said, plus the shared image's caption."""
    said = _one_line(turn.text)
    return f"{said} {_one_line(turn.caption)}" if turn.caption else said


def render_turn(turn: Turn, date_time: str) -> str:
    """`[D<session>:<turn>] (<session date>) <speaker> said, "<text>"` plus
    ` and shared <caption>` when the turn shared an image."""
    return f"[{turn.dia_id}] ({date_time}) {_said(turn)}"


def _require_str(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise TaskError(f"{where}: field '{key}' is missing or not a string")
    return value


def parse_conversation(conversation_id: str, raw: Any, where: str) -> Conversation:
    """Build a `Conversation` from the LoCoMo `conversation` object.

    `where` names the file and sample for error messages. Sessions are ordered by number;
    `session_N_date_time` keys without a `session_N` list (present in the official file) are
    ignored.
    """
    if not isinstance(raw, Mapping):
        raise TaskError(f"{where}: 'conversation' must be an object")
    speaker_a = _require_str(raw, "speaker_a", where)
    speaker_b = _require_str(raw, "speaker_b", where)
    sessions: list[Session] = []
    for key, value in raw.items():
        match = _SESSION_KEY.match(key)
        if match is None:
            continue
        number = int(match.group(1))
        if not isinstance(value, list):
            raise TaskError(f"{where}: '{key}' must be a list of turns")
        date_time = _require_str(raw, f"{key}_date_time", where)
        turns = tuple(_parse_turn(t, f"{where} {key}[{i}]") for i, t in enumerate(value))
        sessions.append(Session(number=number, date_time=date_time, turns=turns))
    if not sessions:
        raise TaskError(f"{where}: conversation has no sessions")
    sessions.sort(key=lambda s: s.number)
    return Conversation(
        conversation_id=conversation_id,
        speaker_a=speaker_a,
        speaker_b=speaker_b,
        sessions=tuple(sessions),
    )


def _parse_turn(raw: Any, where: str) -> Turn:
    if not isinstance(raw, Mapping):
        raise TaskError(f"{where}: a turn must be an object")
    caption = raw.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        raise TaskError(f"{where}: field 'blip_caption' must be a string")
    return Turn(
        dia_id=_require_str(raw, "dia_id", where),
        speaker=_require_str(raw, "speaker", where),
        text=_require_str(raw, "text", where),
        caption=caption or None,
    )
