"""The memorisation check: a skill must be a procedure, not a copy of the training inputs.

A small optimizer given failure evidence tends to write the question's own facts into a skill
("The Orrin Museum is an art museum in Osterlin. It opened in 1931."). Such a body cannot help
on another question and leaks training content into the library. Every body an operator drafts
(induce, consolidate) and every text a refinement adds is checked against the run's training
inputs (`TrainingInputs`: the questions, their passages or conversation and their gold answers)
before it becomes a candidate. Two rules reject it:

- **copy**: it shares `min_copied_words` (default 8) or more consecutive words with a training
  input. Eight words is longer than the generic phrases a procedure shares with any English
  text ("the answer is in the passage"), and shorter than one copied passage sentence; n-grams
  that also occur in the allowed text (the role prompts, the task description and the operator
  prompts) do not count, so repeating the agent's own instructions is no copy.
- **entity**: it names something specific to the training questions: a run of two or more
  capitalised words, a capitalised word of three or more letters that the inputs never write
  in lower case (so not "The" or "Check"), or a number of `min_number_digits` (default 3) or
  more digits (years, amounts), that occurs in the training inputs but not in the allowed
  text. Single- and two-digit numbers are left alone: procedures count steps, calls and words.

A third rule rejects a body that copies the allowed text itself:

- **restates**: `max_restated_share` (default half) or more of its words lie in runs of
  `min_restated_words` (default 5) or more consecutive words of the allowed text, or of the
  evidence the operator showed the optimizer. The agent already reads its role prompt, so a
  skill that repeats it adds nothing, yet ties at the gate (measured: induced retriever skills
  that were the role prompt with a heading, accepted on a 0.00 vs 0.00 validation tie on
  HotpotQA and on the demo); a skill that repeats the critic's evidence is a report, not a
  procedure (the 0.5B optimizer's demo skill was the diagnosis and its tool calls verbatim).

A rejection is a `MemorisationFinding` (rule, the offending span, the input it came from) that
the operator writes to its record in `operators.jsonl` and logs; nothing is dropped silently.
`mask` replaces question-specific names and numbers in evidence text with placeholders, so the
optimizer sees the failure pattern across questions, not one question's content.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.methods.operators import prompts
from grse_graph.tasks.base import Task, TaskQuestion

logger = logging.getLogger(__name__)

DEFAULT_MIN_COPIED_WORDS = 8
DEFAULT_MIN_NUMBER_DIGITS = 3
# A restated run is often the whole body: its finding shows the run's start only.
_SHOWN_RESTATED_WORDS = 12
NAME_PLACEHOLDER = "<name>"
NUMBER_PLACEHOLDER = "<number>"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"\d(?:[\d,.]*\d)?")
# A word of letters, digits, apostrophes or hyphens; capitalised when its first letter is
# upper case (any script: "Émile", "Łódź").
_NAME_WORD = re.compile(r"[^\W\d_][\w'’-]*")


class SourceText(BaseModel):
    """One training input the check compares against, with a label saying where it is from."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="e.g. 'question q3', 'context of q3', 'answer of q3'")
    text: str


class TrainingInputs(BaseModel):
    """What the run's training questions showed the critic and the optimizer (`sources`), and
    the text a skill may repeat freely (`allowed`: role prompts, task description, prompts)."""

    model_config = ConfigDict(frozen=True)

    sources: list[SourceText] = Field(default_factory=list)
    allowed: list[str] = Field(default_factory=list)


class MemorisationSettings(BaseModel):
    """Thresholds of the check (see the module docstring for why these defaults)."""

    model_config = ConfigDict(frozen=True)

    min_copied_words: int = Field(default=DEFAULT_MIN_COPIED_WORDS, ge=3)
    min_number_digits: int = Field(default=DEFAULT_MIN_NUMBER_DIGITS, ge=1)
    min_restated_words: int = Field(default=5, ge=3)
    max_restated_share: float = Field(default=0.5, gt=0.0, le=1.0)


MemorisationRule = Literal["copy", "entity", "restates"]


class MemorisationFinding(BaseModel):
    """Why a body was rejected: the rule, the offending span and the input it came from."""

    rule: MemorisationRule
    span: str
    source: str
    skill: str = ""

    def describe(self) -> str:
        """One line for a skipped reason or a log."""
        if self.rule == "restates":
            return f"restates {self.source}: '{self.span}'"
        what = "copies" if self.rule == "copy" else "names"
        return f"memorised: {what} '{self.span}' from {self.source}"


def training_inputs(
    task: Task, questions: Iterable[TaskQuestion], allowed: Sequence[str] = ()
) -> TrainingInputs:
    """The sources of `questions`: each question, its gold answer and its whole context
    (passages, or the conversation; a context shared by several questions is kept once).
    `allowed` is what the agents are told anyway (role prompts, task description, task
    guidance); the operator prompts are always allowed too."""
    sources: list[SourceText] = []
    seen_contexts: set[str] = set()
    for q in questions:
        sources.append(SourceText(label=f"question {q.id}", text=q.question))
        if q.answer.strip():
            sources.append(SourceText(label=f"answer of {q.id}", text=q.answer))
        context = task.render_full_context(q)
        if context.strip() and context not in seen_contexts:
            seen_contexts.add(context)
            sources.append(SourceText(label=f"context of {q.id}", text=context))
    allowed_texts = [*allowed, *prompts.OPERATOR_PROMPTS]
    return TrainingInputs(sources=sources, allowed=[a for a in allowed_texts if a.strip()])


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _grams(words: Sequence[str], n: int) -> Iterable[tuple[str, ...]]:
    return (tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def _digits(number: str) -> str:
    return re.sub(r"\D", "", number)


@dataclass(frozen=True)
class _Name:
    text: str
    start: int
    end: int


def _capitalised_runs(text: str) -> list[list[re.Match[str]]]:
    """Maximal runs of capitalised words separated by single spaces."""
    runs: list[list[re.Match[str]]] = []
    for match in _NAME_WORD.finditer(text):
        if not match.group()[0].isupper():
            continue
        before = text[match.start() - 1] if match.start() > 0 else " "
        if before.isalnum() or before == "_":
            continue
        if runs and text[runs[-1][-1].end() : match.start()] == " ":
            runs[-1].append(match)
        else:
            runs.append([match])
    return runs


class MemorisationCheck:
    """The check over one run's training inputs; build it once per evolve call (`of`)."""

    def __init__(self, inputs: TrainingInputs, settings: MemorisationSettings) -> None:
        self.settings = settings
        n = settings.min_copied_words
        allowed_text = "\n".join(inputs.allowed)
        self._allowed_lower = allowed_text.lower()
        allowed_words = _words(allowed_text)
        allowed_grams = set(_grams(allowed_words, n))
        self._restated_grams = set(_grams(allowed_words, settings.min_restated_words))
        self._gram_source: dict[tuple[str, ...], str] = {}
        self._source_words: set[str] = set()
        self._number_source: dict[str, str] = {}
        self._texts: list[SourceText] = list(inputs.sources)
        for source in inputs.sources:
            for gram in _grams(_words(source.text), n):
                if gram not in allowed_grams:
                    self._gram_source.setdefault(gram, source.label)
            self._source_words.update(_WORD.findall(source.text))
            for number in _NUMBER.findall(source.text):
                self._number_source.setdefault(_digits(number), source.label)
        allowed_numbers = {_digits(x) for x in _NUMBER.findall(allowed_text)}
        for number in allowed_numbers:
            self._number_source.pop(number, None)

    @classmethod
    def of(
        cls, inputs: TrainingInputs, settings: MemorisationSettings | None = None
    ) -> MemorisationCheck:
        """The check over `inputs` with `settings` (default thresholds when None)."""
        return cls(inputs, settings or MemorisationSettings())

    # --- the two rules -----------------------------------------------------------------------

    def copied_spans(self, text: str) -> list[tuple[str, str]]:
        """The runs of words (each at least `min_copied_words` long) that `text` shares with
        the training inputs, longest first, each with the label of the input it starts in."""
        n = self.settings.min_copied_words
        words = _words(text)
        runs: list[tuple[int, int, str]] = []
        i = 0
        while i <= len(words) - n:
            label = self._gram_source.get(tuple(words[i : i + n]))
            if label is None:
                i += 1
                continue
            end = i + n
            while end < len(words) and tuple(words[end - n + 1 : end + 1]) in self._gram_source:
                end += 1
            runs.append((i, end, label))
            i = end
        runs.sort(key=lambda run: run[0] - run[1])
        return [(" ".join(words[a:b]), label) for a, b, label in runs]

    def restated_share(self, text: str, shown: Sequence[str] = ()) -> tuple[float, str]:
        """The share of `text`'s words that lie in runs of `min_restated_words` or more words
        of the allowed text (and of the `shown` texts), and the start of the longest run."""
        n = self.settings.min_restated_words
        restated = self._restated_grams.union(*(_grams(_words(t), n) for t in shown))
        words = _words(text)
        covered = [False] * len(words)
        for i, gram in enumerate(_grams(words, n)):
            if gram in restated:
                covered[i : i + n] = [True] * n
        longest, run_start = (0, 0), None
        for i, inside in enumerate([*covered, False]):
            if inside and run_start is None:
                run_start = i
            elif not inside and run_start is not None:
                longest = max(longest, (run_start, i), key=lambda r: r[1] - r[0])
                run_start = None
        share = sum(covered) / len(words) if words else 0.0
        run = words[longest[0] : longest[1]]
        preview = " ".join(run[:_SHOWN_RESTATED_WORDS])
        return share, preview + (" ..." if len(run) > _SHOWN_RESTATED_WORDS else "")

    def _source_of(self, phrase: str) -> str | None:
        pattern = re.compile(rf"(?<![\w]){re.escape(phrase)}(?![\w])")
        for source in self._texts:
            if pattern.search(source.text):
                return source.label
        return None

    def _allowed(self, phrase: str) -> bool:
        return phrase.lower() in self._allowed_lower

    def names(self, text: str) -> list[tuple[_Name, str]]:
        """Question-specific names and numbers in `text`, each with the input it occurs in."""
        found: list[tuple[_Name, str]] = []
        for run in _capitalised_runs(text):
            hit = self._run_name(text, run)
            if hit is not None:
                found.append(hit)
        for match in _NUMBER.finditer(text):
            digits = _digits(match.group())
            label = self._number_source.get(digits)
            if len(digits) >= self.settings.min_number_digits and label is not None:
                found.append((_Name(match.group(), match.start(), match.end()), label))
        return sorted(found, key=lambda item: item[0].start)

    def _run_name(self, text: str, run: list[re.Match[str]]) -> tuple[_Name, str] | None:
        # Sub-runs of two or more words, longest first ("The Orrin Museum", "Orrin Museum").
        for size in range(len(run), 1, -1):
            for first in range(len(run) - size + 1):
                start, end = run[first].start(), run[first + size - 1].end()
                phrase = text[start:end]
                if self._allowed(phrase):
                    continue
                label = self._source_of(phrase)
                if label is not None:
                    return _Name(phrase, start, end), label
        # Single words the inputs only ever write capitalised (so not "The" or "Then", which
        # they also write in lower case), anywhere in the text: a list item may start with one.
        for match in run:
            # The word itself, without a possessive or hyphenated tail ("Nadia's" -> "Nadia"):
            # the sources' word set is split the same way.
            word = match.group()[: _WORD.match(match.group()).end()]  # type: ignore[union-attr]
            if len(word) < 3:
                continue
            only_capitalised = word.lower() not in self._source_words
            if word in self._source_words and only_capitalised and not self._allowed(word):
                label = self._source_of(word)
                if label is not None:
                    return _Name(word, match.start(), match.start() + len(word)), label
        return None

    # --- use by the operators ----------------------------------------------------------------

    def find(
        self, text: str, skill: str = "", known: Sequence[str] = (), shown: Sequence[str] = ()
    ) -> MemorisationFinding | None:
        """The first reason `text` (a drafted body, or the text a refinement adds) is a
        memory rather than a procedure, or None when it passes. Spans that occur in `known`
        (bodies of skills already in the library, which passed the check) are not held
        against it; `shown` is the evidence the optimizer was shown, which it must not
        restate either."""
        known_words = [" ".join(_words(k)) for k in known]
        known_lower = [k.lower() for k in known]
        for span, label in self.copied_spans(text):
            if not any(span in k for k in known_words):
                return MemorisationFinding(rule="copy", span=span, source=label, skill=skill)
        for name, label in self.names(text):
            if not any(name.text.lower() in k for k in known_lower):
                return MemorisationFinding(rule="entity", span=name.text, source=label, skill=skill)
        passes: list[tuple[str, Sequence[str]]] = [("the agents' instructions", ())]
        if shown:  # without evidence, a second pass would repeat the first
            passes.append(("its evidence", shown))
        for source, texts in passes:
            share, span = self.restated_share(text, texts)
            if share >= self.settings.max_restated_share:
                return MemorisationFinding(
                    rule="restates",
                    span=span,
                    source=f"{source} ({share:.0%} of its words)",
                    skill=skill,
                )
        return None

    def mask(self, text: str) -> str:
        """`text` with question-specific names and numbers replaced by placeholders."""
        out, last = [], 0
        for name, _ in self.names(text):
            if name.start < last:
                continue
            placeholder = NUMBER_PLACEHOLDER if _NUMBER.fullmatch(name.text) else NAME_PLACEHOLDER
            out += [text[last : name.start], placeholder]
            last = name.end
        out.append(text[last:])
        return "".join(out)


def log_rejection(operator: str, agent: str, finding: MemorisationFinding) -> None:
    """Log one rejected body (the operator record carries the same finding)."""
    logger.warning(
        "%s for agent %s rejected skill %r: %s", operator, agent, finding.skill, finding.describe()
    )
