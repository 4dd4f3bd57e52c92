"""Detect a runaway generation: a reply whose tail keeps repeating the same passage (small models
loop, in a grammar or not, until the token cap; on the stream a loop shows after a few copies).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field


class RepetitionLimits(BaseModel):
    """A runaway tail: at least ``min_repeats`` copies of one passage of at most
    ``max_period_chars`` characters, spanning at least ``min_span_chars``; checked every
    ``check_every_chars`` new characters, which keeps the cost negligible beside generation."""

    model_config = ConfigDict(frozen=True)

    min_repeats: int = Field(default=4, ge=2)
    min_span_chars: int = Field(default=160, ge=2)
    max_period_chars: int = Field(default=1200, ge=1)
    check_every_chars: int = Field(default=32, ge=1)


@dataclass(frozen=True)
class Repetition:
    """A repeating tail: ``period`` characters repeated ``repeats`` times, starting at ``start``."""

    period: int
    repeats: int
    start: int

    def describe(self) -> str:
        """One line for logs and the repair message."""
        return (
            f"the same {self.period}-character passage was repeated {self.repeats} times in a row"
        )


def find_repetition(text: str, limits: RepetitionLimits | None = None) -> Repetition | None:
    """The shortest period whose copies make up a long enough tail of ``text``, or None."""
    chosen = limits or RepetitionLimits()
    length = len(text)
    for period in range(1, min(chosen.max_period_chars, length // chosen.min_repeats) + 1):
        needed = max(chosen.min_repeats * period, chosen.min_span_chars)
        if needed > length:
            continue
        # The last `needed` characters are `period`-periodic when they equal themselves shifted.
        if text[length - needed + period :] != text[length - needed : length - period]:
            continue
        span = needed
        while (
            span + period <= length
            and text[length - span - period : length - span]
            == text[length - span : length - span + period]
        ):
            span += period
        return Repetition(period=period, repeats=span // period, start=length - span)
    return None


class RepetitionWatch:
    """Feed streamed text; `runaway` is set once the tail repeats (see `RepetitionLimits`)."""

    def __init__(self, limits: RepetitionLimits | None = None) -> None:
        self.limits = limits or RepetitionLimits()
        self.text = ""
        self.runaway: Repetition | None = None
        self._checked_at = 0

    def feed(self, piece: str) -> Repetition | None:
        """Add streamed text; return the repetition when this piece completed one."""
        if not piece or self.runaway is not None:
            return self.runaway
        self.text += piece
        if len(self.text) - self._checked_at >= self.limits.check_every_chars:
            self._checked_at = len(self.text)
            self.runaway = find_repetition(self.text, self.limits)
        return self.runaway
