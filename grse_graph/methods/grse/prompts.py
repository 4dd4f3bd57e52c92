"""Prompts of the group-relative critic and of the credit aggregation.

Written for this project after the GRSE paper's App. F: the base critic (skill credits and
agent feedback), the structured diagnosis appended to it (failure types defined), the
instruction to attribute an outcome to the agent whose behaviour differs, and the HotpotQA
answer-length note. The `w/o structure` variant is the base critic alone.
"""

from __future__ import annotations

# The base critic (App. F, Fig. 11): group-relative skill credits and agent feedback.
CRITIC_CREDITS = """\
You are the critic of a team of agents. The same question was run several times (rollouts r1, \
r2, ...) from a fresh context with the same skill libraries. Each rollout has a reward in [0,1] \
and an advantage (its reward relative to the group mean, in group standard deviations). The \
gold answer is not shown. INPUT holds the task, each agent's library, the citation constraints \
and every rollout step by step (r#.s# is step s of rollout r; <<...>> names text shown once).

Compare high- and low-advantage rollouts agent by agent. Attribute a difference in outcome to \
the agent whose behaviour differs between them, which is often not the agent whose output is \
wrong: a wrong final answer can come from evidence an earlier agent never retrieved or never \
handed over. Look past where the error surfaces. When all rollouts have the same reward, use \
what they consistently do (right or wrong) as evidence.

Return:
- credits: at most one per (agent, skill), only for skills in that agent's library. verdict: \
helped, redundant (overlaps another skill: name it in redundant_with), harmful or neutral; \
conflicts_with names skills whose instructions contradict it; utility from -1 (harmful) to 1 \
(helped); evidence cites steps like r2.s1; suggested_refinement is one concrete, general change \
to the skill or empty.
- agent_feedback: per agent, problems that no existing skill covers; missing_capability names \
the capability a new skill should give, or is empty.
Write corrections as general, reusable rules for the agent, never as facts of this question."""

# The structured diagnosis (App. F, Fig. 12), appended to the base critic.
CRITIC_DIAGNOSES = """\
- diagnoses: one per failure you can attribute. agent is the agent whose behaviour caused it; \
failed_refs cite its steps in rollouts with reward < 1, successful_refs its steps in rollouts \
with reward 1 (if any), as listed in citation_constraints. failure_type is one of:
  skill_not_followed: a skill covers the case but the agent did not do what it says;
  skill_defect: the agent followed a skill and the skill's instruction caused the failure;
  missing_capability: no skill covers what the agent needed to do;
  handoff_error: the agent had the needed information but did not pass it on (or passed it \
garbled) to the next agent;
  evidence_missing: the evidence needed for the answer was never found or retrieved;
  answer_format: the answer was right in substance but in the wrong form (too long, extra \
words, wrong date format);
  tool_failure: a tool failed or returned an error, not the agent's reasoning;
  uncertain_attribution: the rollouts do not show which agent or skill caused the failure.
  action: refine (change a skill of that agent that was present in a cited failed rollout; \
also give a credit for that skill), induce (a new skill; skill_id null) or no_edit. \
tool_failure and uncertain_attribution must use no_edit. correction: the rule that would have \
avoided the failure, general enough to reuse on other questions.
If all rollouts succeeded, return no diagnoses."""

CRITIC_SYSTEM = CRITIC_CREDITS + "\n" + CRITIC_DIAGNOSES

# App. F: "On HotpotQA, an answer-length note is appended."
HOTPOTQA_ANSWER_LENGTH_NOTE = """\
Note: HotpotQA is scored by token F1 against a short gold answer (an entity, a date, a number, \
a short phrase, or yes / no). A correct answer with extra words loses reward; treat answers \
longer than the gold form as answer_format failures."""


def critic_system(*, structured: bool, answer_length_note: bool) -> str:
    """The critic's system prompt: the base credits prompt, the diagnosis part unless this is
    the `w/o structure` variant, and the HotpotQA answer-length note when asked."""
    parts = [CRITIC_SYSTEM if structured else CRITIC_CREDITS]
    if answer_length_note:
        parts.append(HOTPOTQA_ANSWER_LENGTH_NOTE)
    return "\n\n".join(parts)


CRITIC_USER = "Critique this group.\n\nINPUT:\n{payload}"

CRITIC_REPAIR = """\
Critique this group.

INPUT:
{payload}

Your earlier diagnoses below break the rules. Return them corrected, in the same order \
(use action no_edit if you cannot support an edit). You may add missing credits.

{violations}"""

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
