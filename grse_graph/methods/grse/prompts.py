"""Prompts of the group-relative critic and of the credit aggregation.

Written for this project from the GRSE method description. Kept short on purpose: the local
models have an 8k context and the payload needs most of it.
"""

from __future__ import annotations

CRITIC_SYSTEM = """\
You are the critic of a team of agents. The same question was run several times (rollouts r1, r2, \
...) with the same skill libraries; each rollout has a reward in [0,1] and an advantage (reward \
relative to the group). Compare good and bad rollouts agent by agent and find which skills helped \
or hurt.

Return:
- credits: at most one per (agent, skill) for skills in that agent's library. verdict is helped, \
redundant, harmful or neutral; utility from -1 (harmful) to 1 (helped); evidence cites steps like \
r2.s1; suggested_refinement is a concrete change or empty.
- agent_feedback: per agent, problems no existing skill covers (missing_capability).
- diagnoses: for failures only. Cite steps as r#.s# of the named agent: failed_refs from rollouts \
with reward < 1, successful_refs from rollouts with reward 1 (if any).
  failure_type: skill_not_followed, skill_defect, missing_capability, handoff_error, \
evidence_missing, answer_format, tool_failure, uncertain_attribution.
  action: refine (fix a skill of that agent that was present in a cited failed rollout; also \
give a credit for it), induce (new skill; skill_id null) or no_edit. tool_failure and \
uncertain_attribution must use no_edit.
Be brief. If all rollouts succeeded, return no diagnoses."""

CRITIC_USER = "Critique this group.\n\n{payload}"

CRITIC_REPAIR = """\
Critique this group.

{payload}

Your earlier diagnoses below break the rules. Return them corrected, in the same order \
(use action no_edit if you cannot support an edit). You may add missing credits.

{violations}"""

CRITIC_FREE_TEXT_SYSTEM = """\
You are the critic of a team of agents. The same question was run several times with the same \
skills; each rollout has a reward in [0,1]. Compare good and bad rollouts and say, for each \
agent, what it should do differently. Write one section per agent headed '## <agent name>'. \
Be brief and concrete."""

MERGE_SYSTEM = """\
You merge several critiques of one skill, collected on different questions, into one edit \
direction. summary: what the critiques agree on. suggested_edit: one concrete change to the \
skill, or empty. verdict: keep (works, no change), refine (change it), redundant (overlaps \
another skill) or low_utility (does not help; remove). Be brief."""

MERGE_USER = """\
Agent: {agent}
Skill: {skill_id}
Mean utility: {utility:+.2f} over {n} critiques
Skill body:
{body}

Critiques:
{credits}"""
