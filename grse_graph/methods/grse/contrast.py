"""The group comparison in a diagnosis's own terms: how the diagnosed agent's output ended in a
cited failed run (with that run's tool calls), and in a successful run of the same group.

The optimizer reads a diagnosis's explanation and correction. A small critic writes them
vaguely ("the retriever did not provide the correct answer"), while the runs themselves show
the difference: in the demo's failed runs the retriever ended with a wrong `Candidate answer:`
line that the reasoner copied, and on the memory questions every grep query was a whole
invented sentence that matched nothing. The ends of the outputs carry the hand-off
(`Candidate answer:`, `Evidence:`), so those are kept, with the first tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from grse_graph.methods.grse.checks import is_full_reward
from grse_graph.methods.grse.critic_schema import StepRef
from grse_graph.methods.plan import FailureDiagnosis, OutputContrast
from grse_graph.skills.text import one_line
from grse_graph.team.rollout import Rollout, Step, ToolCallRecord

CONTRAST_CHARS = 240
"""Characters kept from the end of each output: a hand-off line or two."""
CALL_CHARS = 120
"""Characters kept of a tool call's arguments, and of its result's first line."""
MAX_CALLS = 3


def output_end(text: str, chars: int = CONTRAST_CHARS) -> str:
    """The last `chars` characters of `text` on one line, cut at a word start (with "...")."""
    flat = one_line(text)
    if len(flat) <= chars:
        return flat
    tail = flat[-chars:]
    space = tail.find(" ")
    return "... " + (tail[space + 1 :] if 0 <= space < len(tail) - 1 else tail)


def _head(text: str, chars: int) -> str:
    flat = one_line(text)
    return flat if len(flat) <= chars else flat[:chars].rsplit(" ", 1)[0] + " ..."


def _call_line(call: ToolCallRecord) -> str:
    """`name(arguments) -> "first line of the reply"`, each part cut at `CALL_CHARS`."""
    arguments = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items()
    )
    reply = call.error or (call.result.strip().splitlines() or [""])[0]
    return f'{call.name}({_head(arguments, CALL_CHARS)}) -> "{_head(reply, CALL_CHARS)}"'


def _cited_step(refs: Sequence[str], rollouts: Sequence[Rollout], agent: str) -> Step | None:
    for text in refs:
        ref = StepRef.parse(text)
        if ref is None or not 1 <= ref.rollout <= len(rollouts):
            continue
        steps = rollouts[ref.rollout - 1].steps
        if 1 <= ref.step <= len(steps) and steps[ref.step - 1].agent == agent:
            return steps[ref.step - 1]
    return None


def _first_successful_step(rollouts: Sequence[Rollout], agent: str) -> Step | None:
    for rollout in rollouts:
        if is_full_reward(rollout.reward):
            for step in rollout.steps:
                if step.agent == agent:
                    return step
    return None


def output_contrast(
    diagnosis: FailureDiagnosis, rollouts: Sequence[Rollout], chars: int = CONTRAST_CHARS
) -> OutputContrast | None:
    """The end of the agent's output at its first cited failed step, and at its first cited
    successful step (else its step in the group's first successful run: small critics often
    cite none); None when no cited failed step of the agent exists."""
    failed = _cited_step(diagnosis.failed_refs, rollouts, diagnosis.agent)
    if failed is None:
        return None
    successful = _cited_step(
        diagnosis.successful_refs, rollouts, diagnosis.agent
    ) or _first_successful_step(rollouts, diagnosis.agent)
    return OutputContrast(
        failed=output_end(failed.output, chars),
        successful=output_end(successful.output, chars) if successful is not None else "",
        failed_calls=[_call_line(call) for call in failed.tool_calls[:MAX_CALLS]],
    )
