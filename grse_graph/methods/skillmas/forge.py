"""Refine and prune (the code's skill forge, spec §5.4) as operator rules on the shared
driver. Both read only Q^s's global entry; neither changes Q values. Refine rewrites a body in
place (status and Q history kept); prune disables."""

from __future__ import annotations

from typing import NamedTuple

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.operators.driver import LocalRule, OperatorRule

from .drafting import BODY_FORMAT, RefinedBody, write
from .settings import EvolutionSettings
from .skills import TASK_KEY, content_problems, is_seed, lineage_id
from .work import EvolutionAction, EvolutionWork, RoundEvidence


class Owned(NamedTuple):
    """A skill in one library, with the lineage id Q^s knows it by."""

    skill_id: str
    agent: str
    name: str


class Refine(OperatorRule[EvolutionWork, Owned, EvolutionAction]):
    """The forge's refine: the first 3 underperformers (global n >= 3, q < 0.2) in table order,
    seeds taking their slots unrefined, disabled skills skipped; bodies rewritten in place.
    A skill touched earlier this round (by a repair) is not refined again."""

    def __init__(
        self, evidence: RoundEvidence, provider: ChatModelProvider, settings: EvolutionSettings
    ) -> None:
        self.evidence, self.provider, self.settings = evidence, provider, settings

    def targets(self, state: EvolutionWork) -> list[Owned]:
        # Q^s has one entry per lineage, so a lineage several agents hold (restructuring
        # copies) is one target: the copy in the library listed last.
        owners = {
            lineage_id(s, agent): (agent, s.name)
            for agent, library in state.libraries.items()
            for s in library.skills
        }
        s = self.settings
        # Disabled skills left their libraries; the slice comes before seeds are skipped.
        live = [i for i in state.table.underperformers(s.refine_q, s.refine_trials) if i in owners]
        return [Owned(i, *owners[i]) for i in live[: s.max_refine]]

    def applicable(self, state: EvolutionWork, target: Owned) -> bool:
        library = state.libraries.get(target.agent)
        if library is None or not library.has(target.name):
            return False
        skill = library.get(target.name)
        key = (skill.metadata.get(TASK_KEY, ""), target.agent, target.name)
        return not is_seed(skill) and key not in state.touched

    async def apply(
        self, state: EvolutionWork, target: Owned
    ) -> tuple[EvolutionWork, list[EvolutionAction]]:
        skill_id, agent, name = target
        skill = state.libraries[agent].get(name)
        tau = skill.metadata.get(TASK_KEY, "")
        state.touched.add((tau, agent, name))
        used = [t for t in self.evidence.traces if name in t.used.get(agent, [])]
        s = self.settings
        lines = [
            f"Skill {name} has success rate {state.table.global_q(skill_id):.2f} over "
            f"{state.table.count(skill_id)} uses (threshold {s.refine_q}).",
            "Episodes where it was used:",
            *[f"- [{t.task_type}] {t.summary} ({t.error_message or 'correct'})" for t in used[:10]],
            f"Current body:\n{skill.body}",
            "Improve it to raise the success rate: keep what works, fix what does not.",
            BODY_FORMAT,
        ]
        drawn = await write(
            self.provider,
            RefinedBody,
            "\n".join(lines),
            s.refine_temperature,
            s.caps.refine_max_tokens,
        )
        problems = content_problems(drawn.body) if isinstance(drawn, RefinedBody) else [drawn]
        if isinstance(drawn, RefinedBody) and not problems:
            state.libraries[agent] = state.libraries[agent].replace(
                skill.with_body(drawn.body.strip())
            )
            return state, [EvolutionAction(kind="refine", agent=agent, skill=name, task_type=tau)]
        rejected = EvolutionAction(
            kind="rejected", agent=agent, skill=name, detail=f"refine: {'; '.join(problems)}"
        )
        return state, [rejected]


class Prune(LocalRule[EvolutionWork, Owned, EvolutionAction]):
    """The forge's prune: every non-seed skill with global n >= 5 and q < 0.05 is disabled
    (no cap; a skill refined this round can still be pruned, as in the code)."""

    def __init__(self, settings: EvolutionSettings) -> None:
        self.settings = settings

    def targets(self, state: EvolutionWork) -> list[Owned]:
        s, table = self.settings, state.table
        found = [
            Owned(lineage_id(skill, agent), agent, skill.name)
            for agent, library in state.libraries.items()
            for skill in library.skills
            if not is_seed(skill)
        ]
        return [
            o
            for o in found
            if table.count(o.skill_id) >= s.prune_trials and table.global_q(o.skill_id) < s.prune_q
        ]

    def applicable(self, state: EvolutionWork, target: Owned) -> bool:
        library = state.libraries.get(target.agent)
        return library is not None and library.has(target.name)

    def act(
        self, state: EvolutionWork, target: Owned
    ) -> tuple[EvolutionWork, list[EvolutionAction]]:
        q = state.table.global_q(target.skill_id)
        state.disable(target.agent, target.name)
        return state, [
            EvolutionAction(
                kind="prune", agent=target.agent, skill=target.name, detail=f"q {q:.2f}"
            )
        ]
