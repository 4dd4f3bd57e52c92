"""The critic payload: one question's task, libraries and all G rollouts as compact text.

Repeated text is carried once and referenced (GUIDE §3):

- the task input (question and passages, exactly as the first agent saw it) once as ``<<INPUT>>``;
- each agent's system prompt once as ``<<SYSTEM:agent>>`` (a second, different version of the same
  agent's prompt gets ``<<SYSTEM:agent#2>>``), with skill bodies inside it replaced by
  ``<<SKILL:agent/name>>`` because the libraries section already shows them (the same for
  a tool result that returns a skill body, e.g. ``load_skill``);
- an earlier step's output or tool result quoted inside a later step's input (the hand-off) as
  ``<<r1.s1>>`` or ``<<r1.s1.t1>>``;
- a tool result identical to one shown before (the same grep in several rollouts) as
  ``same as <<r1.s1.t1>>`` (tool call t1 of step r1.s1).

Steps are labelled ``r{rollout}.s{step}`` (1-based) so the critic can cite them. For LoCoMo the
task input never holds the conversation (the retriever greps it), so neither does the payload.
The naive size is the same rendering with nothing replaced; both sizes are reported.

What decides an outcome is never cut away (issue 9): a long step output keeps its end (where
the hand-off lines `Candidate answer:` / `Evidence:` are) and a quarter of its head; a tool
result keeps every retrieved turn line with its dialogue id, shortening the turns' text
instead. With `PayloadLimits.max_tokens` the payload is fitted to the critic's context by
counting tokens: it is rendered uncut first and cut further only while it is over budget.

The payload of the structured critic also carries App. F's `task_category` (the category with
labels, `not_grouped` without) and `citation_constraints` (per agent: its skills and its steps
in failed and in successful rollouts); structured analysis is what adds them (App. F), so the
`w/o structure` payload has neither (only the category itself with labels). Every payload
says per step whether skill use was observed (tool and path modes) or only present (inline
mode, where the bodies sit in the system prompt).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.errors import ConfigError
from grse_graph.llm.structured.budget import BUDGET_OVERHEAD_TOKENS, CHARS_PER_TOKEN
from grse_graph.llm.structured.methods import json_request
from grse_graph.llm.tokens import TokenCounter, approximate_tokens
from grse_graph.methods.grse import prompts
from grse_graph.methods.grse.critic_schema import (
    CriticCredits,
    CriticOutput,
    CriticVocabulary,
    step_label,
)
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout, Step

INPUT_REF = "<<INPUT>>"
NOT_GROUPED = "not_grouped"
"""`task_category` of a payload without labels (App. F)."""
# A retrieved conversation turn: `[D3:12] (date) Speaker said, "..."`.
_TURN_PREFIX = "[D"
FIT_CAPS = (4000, 2000, 1000, 500, 250)
"""Fitting: the per-field caps (characters) tried in turn until a payload fits its token budget."""
# A turn line keeps at least this much of its text, so every retrieved turn stays readable.
_MIN_TURN_TEXT_CHARS = 60
# Shorter texts are cheaper to repeat than to reference (and too short to be unambiguous).
_MIN_SHARED_RESULT_CHARS = 40
_MIN_QUOTED_CHARS = 12

R = TypeVar("R")


class PayloadLimits(BaseModel):
    """How the payload is kept inside the critic's context.

    `max_tokens` is the payload's budget in the critic model's tokens: the payload is rendered
    uncut and, while over budget, cut further (see the module doc). None keeps the fixed
    per-field character caps below (None: no cap). A cut field says how much was cut, so the
    critic knows the text is incomplete.
    """

    model_config = ConfigDict(frozen=True)

    step_output_chars: int | None = Field(default=1500, ge=1)
    tool_result_chars: int | None = Field(default=800, ge=1)
    step_input_chars: int | None = Field(default=1500, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)

    def uncut(self) -> PayloadLimits:
        """The same budget with no per-field caps."""
        return self.model_copy(
            update={"step_output_chars": None, "tool_result_chars": None, "step_input_chars": None}
        )

    def capped(self, chars: int) -> PayloadLimits:
        """The same budget with every per-field cap at `chars`."""
        return self.model_copy(
            update={
                "step_output_chars": chars,
                "tool_result_chars": chars,
                "step_input_chars": chars,
            }
        )


def critic_instruction_tokens(*, structured: bool, schema_in_prompt: bool) -> int:
    """Tokens of what the critic sends besides its payload, at the most: its system prompt
    with the HotpotQA note, the user message around the payload, the chat framing
    (`BUDGET_OVERHEAD_TOKENS`) and, where its structured-output method shows the schema in the
    prompt (all but `json_grammar`), the schema as `json_request` writes it (JSON counted
    densely, `CHARS_PER_TOKEN`; function calling's tool schema is about as long). The
    `w/o structure` critic (`structured=False`) has the shorter prompt and the credits
    schema."""
    system = prompts.critic_system(structured=structured, answer_length_note=True)
    frame = prompts.CRITIC_USER.format(payload="")
    tokens = approximate_tokens(system + frame) + BUDGET_OVERHEAD_TOKENS
    if schema_in_prompt:
        schema = json_request(CriticOutput if structured else CriticCredits)
        tokens += math.ceil(len(schema) / CHARS_PER_TOKEN)
    return tokens


def critic_payload_budget(context_tokens: int, output_cap: int, instruction_tokens: int) -> int:
    """The payload's token budget (`PayloadLimits.max_tokens`): the critic endpoint's context
    less the critic's output cap and its instructions (`critic_instruction_tokens`), so the
    whole call fits the context. `ConfigError` when nothing is left for the payload."""
    budget = context_tokens - output_cap - instruction_tokens
    if budget < 1:
        raise ConfigError(
            f"a critic context of {context_tokens} tokens leaves no room for the payload after "
            f"its {output_cap}-token cap and {instruction_tokens} tokens of instructions"
        )
    return budget


@dataclass(frozen=True)
class Fitted(Generic[R]):
    """A rendering fitted to its token budget: its tokens (None: no budget, not counted), the
    per-field cap it ended at (None: uncut, or the fixed caps without a budget) and whether even
    the smallest cap is over budget (it is then sent as is; an overflow is the call's error)."""

    rendering: R
    tokens: int | None = None
    cap: int | None = None
    over_budget: bool = False


def fit_to_budget(
    render: Callable[[PayloadLimits], R], limits: PayloadLimits, count: Callable[[R], int]
) -> Fitted[R]:
    """The least-cut rendering within `limits.max_tokens` (counted with `count`): uncut first,
    then each `FIT_CAPS` cap; without a budget, the rendering with `limits`' own caps."""
    if limits.max_tokens is None:
        return Fitted(render(limits))
    rendering = render(limits.uncut())
    tokens = count(rendering)
    if tokens <= limits.max_tokens:
        return Fitted(rendering, tokens)
    for cap in FIT_CAPS:
        rendering = render(limits.capped(cap))
        tokens = count(rendering)
        if tokens <= limits.max_tokens:
            return Fitted(rendering, tokens, cap)
    return Fitted(rendering, tokens, FIT_CAPS[-1], over_budget=True)


class CriticPayload(BaseModel):
    """The rendered payload, its size and the size it would have without references."""

    question_id: str
    text: str
    size_chars: int
    naive_size_chars: int
    n_rollouts: int
    references: list[str] = Field(default_factory=list)
    size_tokens: int | None = None
    # Which per-field cap the fitting ended at (None: uncut, or the fixed caps without a budget).
    fitted_cap_chars: int | None = None
    over_budget: bool = False


def _cap(text: str, limit: int | None) -> str:
    """Keep the first quarter and the end of a long text: outputs end with their hand-off."""
    if limit is None or len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return f"{text[:head]} [... {len(text) - limit} chars cut ...] {text[len(text) - tail :]}"


def _cap_tool_result(text: str, limit: int | None) -> str:
    """Every retrieved turn line is kept with its dialogue id; when the result is over `limit`,
    the turns' text is shortened evenly instead (other lines are capped as plain text)."""
    if limit is None or len(text) <= limit:
        return text
    lines = text.split("\n")
    turns = {i for i, line in enumerate(lines) if line.startswith(_TURN_PREFIX)}
    if not turns:
        return _cap(text, limit)
    per_turn = max(_MIN_TURN_TEXT_CHARS, limit // len(turns))
    out = []
    for i, line in enumerate(lines):
        if i in turns and len(line) > per_turn:
            out.append(f"{line[:per_turn]} [... {len(line) - per_turn} chars cut]")
        else:
            out.append(line)
    return "\n".join(out)


def _skill_key(agent: str, name: str) -> str:
    return f"<<SKILL:{agent}/{name}>>"


def _fmt_reward(x: float) -> str:
    return f"{x:.2f}"


@dataclass
class _Renderer:
    """Renders the payload either with references (compact) or with every text inline (naive)."""

    question: TaskQuestion
    libraries: Mapping[str, SkillLibrary]
    rollouts: Sequence[Rollout]
    advantages: Sequence[float]
    _: KW_ONLY
    with_labels: bool
    structured: bool
    limits: PayloadLimits
    compact: bool
    observed: Mapping[str, bool]
    constraints: CriticVocabulary | None
    text: str = field(default="", init=False)
    task_input: str = field(default="", init=False)
    system_keys: dict[tuple[str, str], str] = field(default_factory=dict, init=False)
    references: list[str] = field(default_factory=list, init=False)
    # Identical tool results (e.g. the same grep in several rollouts) are shown once.
    tool_results: dict[str, str] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.task_input = self._task_input()

    def _task_input(self) -> str:
        for rollout in self.rollouts:
            if rollout.steps:
                return rollout.steps[0].input
        return self.question.question

    def _strip_skills(self, agent: str, prompt: str) -> str:
        library = self.libraries.get(agent)
        if library is None:
            return prompt
        for skill in library.skills:
            body = skill.body.strip()
            if body and body in prompt:
                prompt = prompt.replace(body, _skill_key(agent, skill.name))
        return prompt

    def _system_ref(self, step: Step) -> str:
        key = (step.agent, step.system_prompt)
        if key not in self.system_keys:
            version = 1 + sum(1 for a, _ in self.system_keys if a == step.agent)
            suffix = "" if version == 1 else f"#{version}"
            self.system_keys[key] = f"<<SYSTEM:{step.agent}{suffix}>>"
        return self.system_keys[key]

    def render(self) -> str:
        parts = [self._task(), self._libraries(), self._citation_constraints()]
        rollouts = self._rollouts()
        if self.compact:
            parts.append(self._system_prompts())
        parts.append(rollouts)
        return "\n\n".join(p for p in parts if p)

    def _task(self) -> str:
        lines = ["# Task"]
        if not (self.compact and self.question.question in self.task_input):
            lines.append(f"Question: {self.question.question}")
        grouped = self.with_labels and self.question.category is not None
        if grouped or self.structured:
            lines.append(f"task_category: {self.question.category if grouped else NOT_GROUPED}")
        if self.compact and self.task_input.strip():
            lines.append(f"{INPUT_REF} (the task input every agent received) =")
            lines.append(self.task_input)
            self.references.append(INPUT_REF)
        return "\n".join(lines)

    def _libraries(self) -> str:
        lines = ["# Skill libraries"]
        for agent, library in self.libraries.items():
            skills = list(library.skills)
            lines.append(f"## {agent}: {len(skills)} skill(s)")
            for skill in skills:
                lines.append(f"- {skill.name}: {skill.description}")
                if self.compact:
                    lines.append(f"  {_skill_key(agent, skill.name)} =")
                lines.append(skill.body.strip())
        return "\n".join(lines)

    def _citation_constraints(self) -> str:
        if self.constraints is None:
            return ""
        lines = [
            "# citation_constraints",
            "failed_refs cite steps of the named agent in rollouts with reward < 1, "
            "successful_refs its steps in rollouts with reward 1; refine names one of its skills.",
        ]
        for agent, vocabulary in self.constraints.agents.items():
            lines.append(
                f"- {agent}: skills [{', '.join(vocabulary.skills) or '-'}]; "
                f"failed_refs [{', '.join(vocabulary.failed_refs) or '-'}]; "
                f"successful_refs [{', '.join(vocabulary.successful_refs) or '-'}]"
            )
        return "\n".join(lines)

    def _skill_use(self, step: Step) -> str:
        present = ", ".join(step.skills_present) or "-"
        if self.observed.get(step.agent, False):
            return f"skills present: {present}; invoked: {', '.join(step.skills_invoked) or '-'}"
        # Inline skills sit in the system prompt: whether the agent used one is not observable.
        return f"skills present (inline; use not observable): {present}"

    def _system_prompts(self) -> str:
        if not self.system_keys:
            return ""
        lines = ["# System prompts"]
        for (agent, prompt), key in self.system_keys.items():
            lines.append(f"{key} =")
            lines.append(self._strip_skills(agent, prompt).strip())
            self.references.append(key)
        return "\n".join(lines)

    def _step_input(self, step: Step, earlier: list[tuple[str, str]]) -> str:
        text = step.input
        if self.compact:
            if self.task_input.strip() and self.task_input in text:
                text = text.replace(self.task_input, INPUT_REF)
            # Longest first, so a tool result quoted inside an output is not split apart.
            for label, quoted in sorted(earlier, key=lambda item: -len(item[1])):
                if len(quoted.strip()) >= _MIN_QUOTED_CHARS and quoted in text:
                    text = text.replace(quoted, f"<<{label}>>")
        return _cap(text, self.limits.step_input_chars)

    def _step(self, label: str, step: Step, earlier: list[tuple[str, str]]) -> str:
        system = self._system_ref(step) if self.compact else step.system_prompt
        lines = [f"[{label}] agent={step.agent}"]
        lines.append(self._skill_use(step))
        lines.append(f"system: {system}")
        lines.append(f"input: {self._step_input(step, earlier)}")
        for k, call in enumerate(step.tool_calls, start=1):
            args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
            result = call.error if call.error is not None else call.result
            tag = "error" if call.error is not None else "result"
            if self.compact:
                # A `load_skill` result is the skill body, already in the libraries section.
                result = self._strip_skills(step.agent, result)
            shown = _cap_tool_result(result, self.limits.tool_result_chars)
            if self.compact and len(result) >= _MIN_SHARED_RESULT_CHARS:
                first = self.tool_results.setdefault(result, f"{label}.t{k}")
                if first != f"{label}.t{k}":
                    shown = f"same as <<{first}>>"
            lines.append(f"tool {label}.t{k} {call.name}({args}) {tag}: {shown}")
        lines.append(f"output: {_cap(step.output, self.limits.step_output_chars)}")
        return "\n".join(lines)

    def _rollouts(self) -> str:
        rewards = [r.reward for r in self.rollouts]
        mean = sum(rewards) / len(rewards) if rewards else 0.0
        lines = [f"# Rollouts (G={len(self.rollouts)}, mean reward {_fmt_reward(mean)})"]
        for i, (rollout, adv) in enumerate(zip(self.rollouts, self.advantages, strict=True)):
            lines.append(
                f"## r{i + 1} reward={_fmt_reward(rollout.reward)} advantage={adv:+.2f} "
                f"answer={json.dumps(rollout.answer, ensure_ascii=False)}"
            )
            if rollout.error is not None:
                lines.append(f"execution error: {rollout.error}")
            earlier: list[tuple[str, str]] = []
            for j, step in enumerate(rollout.steps):
                label = step_label(i, j)
                lines.append(self._step(label, step, earlier))
                earlier.append((label, step.output))
                earlier.extend(
                    (f"{label}.t{k}", call.result)
                    for k, call in enumerate(step.tool_calls, start=1)
                    if call.error is None
                )
        return "\n".join(lines)


def build_critic_payload(
    question: TaskQuestion,
    libraries: Mapping[str, SkillLibrary],
    rollouts: Sequence[Rollout],
    advantages: Sequence[float],
    *,
    with_labels: bool = False,
    structured: bool = True,
    limits: PayloadLimits | None = None,
    observed_skill_use: Mapping[str, bool] | None = None,
    constraints: CriticVocabulary | None = None,
    token_counter: TokenCounter | None = None,
) -> CriticPayload:
    """Render one group for the critic, with repeated text replaced by references.

    `rollouts` and `advantages` are in group order; rollout i is labelled ``r{i+1}``. The
    question's category is the `task_category` only `with_labels` (the `w/ label` variant).
    `observed_skill_use[agent]` says whether that agent's skill loads are recorded (tool and
    path modes; default: not, as in inline mode). `constraints` are rendered as the
    `citation_constraints` section. `structured=False` (the `w/o structure` critic) renders
    no `citation_constraints` (giving `constraints` is then an error) and no `task_category`
    without labels. With `limits.max_tokens` the payload is fitted to that
    budget, counted with `token_counter` (default: `approximate_tokens`).
    """
    if len(rollouts) != len(advantages):
        raise ValueError(
            f"build_critic_payload: {len(rollouts)} rollouts but {len(advantages)} advantages"
        )
    if not rollouts:
        raise ValueError("build_critic_payload: a group needs at least one rollout")
    if not structured and constraints is not None:
        raise ValueError(
            "build_critic_payload: citation constraints belong to the structured critic"
        )
    limits = limits or PayloadLimits()
    observed = dict(observed_skill_use or {})

    def render(field_limits: PayloadLimits, *, compact: bool = True) -> _Renderer:
        renderer = _Renderer(
            question,
            libraries,
            rollouts,
            advantages,
            with_labels=with_labels,
            structured=structured,
            limits=field_limits,
            compact=compact,
            observed=observed,
            constraints=constraints,
        )
        renderer.text = renderer.render()
        return renderer

    count = token_counter or approximate_tokens
    fitted = fit_to_budget(render, limits, lambda renderer: count(renderer.text))
    compact = fitted.rendering
    naive = render(limits.uncut(), compact=False).text
    return CriticPayload(
        question_id=question.id,
        text=compact.text,
        size_chars=len(compact.text),
        naive_size_chars=len(naive),
        n_rollouts=len(rollouts),
        references=compact.references,
        size_tokens=fitted.tokens,
        fitted_cap_chars=fitted.cap,
        over_budget=fitted.over_budget,
    )
