"""Prompts of the MASkills critic and credit merge, written for this project.

Their structure follows the reference (spec maskills.md §2.2 and §3): the critic judges every
(agent, skill) pair of the skill trace against the counterfactual of that skill being absent,
with the rest of the team held fixed, cites an observation, and gives each agent a residual.
The wording is ours. No worked example carries a question or answer from any data set, so no
test item can leak into a prompt (the reference's LoCoMo credit prompt quoted a test-split gold
answer, spec D-11).
"""

from __future__ import annotations

CRITIC_SYSTEM = """\
You assign credit to the skills of a team of agents from ONE recorded run (a trajectory). \
Skills are instructions added to an agent's prompt.

For every (agent, skill) pair listed under "Invoked skills", keep the rest of the team as it \
was and ask: would the outcome have been better or worse without this skill? Give:
- evidence: at least one concrete observation from the trajectory;
- verdict: helped, redundant (adds nothing another skill already gives), harmful or neutral;
- utility_delta: from -1 (it hurt the score) through 0 (no effect) to 1 (it helped);
- suggested_edit: one concrete change to the skill's text, or empty;
- redundant_with / conflicts_with: names of skills of the same agent it overlaps with or \
contradicts, or empty.

Then give every agent a residual: what it did well or badly that no single skill explains \
(summary), whether a new skill would close that gap (needs_new_skill) and the capability it \
lacks (missing_capability, or empty). Use the agent names exactly as listed. Be brief."""

CRITIC_USER = "Assign credit for this trajectory.\n\n{payload}"

BREVITY_HINT = (
    "Note: gold answers of this task are usually one or two words; credit skills that make the "
    "final agent give the shortest answer that is still faithful, and blame verbose answers."
)

POSITION_ROLES = {
    "first": "initial response",
    "middle": "intermediate step",
    "last": "final answer (the one scored)",
}

CHECKLIST = """\
Checklist:
- initial response: did it find and pass on what the question needs?
- intermediate steps: did they use the earlier output correctly, without dropping facts?
- final answer: is it correct, complete and in the expected form?"""

MERGE_SYSTEM = """\
You merge several credits of one skill, each from a different trajectory, into one stable \
judgement. Keep what recurs, resolve contradictions, drop duplicates, and weight each point by \
how often it occurs. verdict: keep (works as it is), refine (change it), redundant (overlaps \
another skill) or low_utility (does not help; remove). suggested_edit: one concrete change, or \
empty when keep. utility_score: the overall effect from -1 to 1. Be brief."""

MERGE_USER = """\
Agent: {agent}
Skill: {name} - {description}
Body:
{body}

Credits ({n}):
{credits}"""
