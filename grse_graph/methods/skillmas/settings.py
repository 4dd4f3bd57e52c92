"""SkillMAS's section of `TrainConfig` (spec skillmas.md §8 for the code's values, §9.2 for the
QA defaults; docs/SKILLMAS.md records every choice).

Loop-level settings are shared: `iterations` is the number of rounds R (5, GRSE's T),
`batch_size` the size of the fixed train subset drawn once (in proportion to category) and
reused every round, `library_limit` the per-agent limit L (active + shadow skills).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.methods.base import MethodSettings
from grse_graph.methods.operators.base import OperatorSettings

from .restructure import MAX_AGENTS, RestructureMode


class SkillmasSettings(MethodSettings):
    """SkillMAS's knobs.

    - `task_type`: `category` (tau = the question's category; label-using) or `all`.
    - `k`: skills selected per agent step (row 9).
    - `pool_min_uses` / `pool_min_success_rate`: promotion thresholds (code: 3 / 0.6).
    - `restructure`: `guarded` (row 20's guards) or `code` (the reference code's rule).
    - `max_agents`: team size cap of the guarded rule (seed + 2).
    - `measure_final`: execute the final state X_{R+1} once more on the subset.
    - `checkpoint`: which score picks the best round: `train` (the round's success rate on the
      fixed subset, as in the paper) or `validation` (each round's state X_r also runs the
      validation set greedily with active skills only; its mean reward decides).
    - `create_requires_diagnosis`: CREATE only for locally diagnosable failure clusters (the
      paper, row 15); off: the code's rule (a patch skill even without a verified cause).
    - `judge_max_tokens` / `analyst_max_tokens`: caps of the usage judge and the analyst
      (None: the critic role's cap).
    - `executor_credit`: what Q^a learns from (row 6): `episode` (the code: the episode outcome
      for every agent with a step) or `local` (each agent's executor-local verified outcome,
      where a verifier applies; the episode outcome otherwise).
    - `drop_policy`: after a round-level drop > 0.02 (row 17): `flag` (the code: report it) or
      `demote` (the previous round's promotions go back to the pool and its restructuring edit
      is reverted).
    - `pool_counting`: `round` (the code: this round's uses only) or `cumulative` (uses and
      successes add up over rounds while a skill waits, row 18); `pool_disable_after`: disable
      a shadow skill after this many failed evaluations (enough uses, rate below the
      threshold); None: never (the code, which can hold a skill forever).
    - `specialist_mode` (row 19): `insert` ((A): the specialist is a new agent inserted before
      the final agent, run for its task types) or `route` ((B): an alternative executor for one
      seed agent's slot, chosen per question by a softmax over Q^a, temperature
      `route_temperature`, sampled in training rounds and argmax otherwise).
    - `analyst` (row 14): `single` (one structured critic call per cluster) or `loop` (the
      code's tool-using analyst loop, at most `analyst_turns` turns, a tool call every turn).
    """

    name: Literal["skillmas"] = "skillmas"
    task_type: Literal["category", "all"] = "category"
    k: int = Field(default=3, ge=1)
    pool_min_uses: int = Field(default=3, ge=1)
    pool_min_success_rate: float = Field(default=0.6, ge=0.0, le=1.0)
    restructure: RestructureMode = "guarded"
    max_agents: int = Field(default=MAX_AGENTS, ge=2)
    measure_final: bool = True
    checkpoint: Literal["train", "validation"] = "train"
    create_requires_diagnosis: bool = True
    judge_max_tokens: int | None = Field(default=300, ge=1)
    analyst_max_tokens: int | None = Field(default=None, ge=1)
    executor_credit: Literal["episode", "local"] = "episode"
    drop_policy: Literal["flag", "demote"] = "flag"
    pool_counting: Literal["round", "cumulative"] = "round"
    pool_disable_after: int | None = Field(default=None, ge=1)
    specialist_mode: Literal["insert", "route"] = "insert"
    route_temperature: float = Field(default=0.5, gt=0.0)
    analyst: Literal["single", "loop"] = "single"
    analyst_turns: int = Field(default=6, ge=1)


class EvolutionSettings(BaseModel):
    """What the SkillMAS operators use where the shared ones have their own rules.

    Defaults are the code's: at most 3 LEARN, 3 CREATE and 3 refines a round; 15 written
    skills over the team; a task type counts with a 0.02 share; the learn/create priority
    thresholds; refine at global n >= 3 and q < 0.2, prune at n >= 5 and q < 0.05;
    temperatures LEARN 0.3, CREATE (and the description rewrites) 0.4, refine 0.3. Token caps
    are the shared operators' (`OperatorSettings`): writing calls take induce's cap (1,200),
    refine takes refine's (800).
    """

    model_config = ConfigDict(frozen=True)

    max_learn: int = Field(default=3, ge=0)
    max_create: int = Field(default=3, ge=0)
    max_refine: int = Field(default=3, ge=0)
    max_auto_skills: int = Field(default=15, ge=0)
    min_share: float = 0.02
    learned_good_q: float = 0.8
    proven_rate: float = 0.60
    target_rate: float = 0.90
    good_skill_q: float = 0.85
    weak_link_delta: float = 0.05
    variance_trigger: float = 0.02
    relevant_from: int = Field(default=3, ge=0, description="updates before a q counts")
    refine_q: float = 0.2
    refine_trials: int = Field(default=3, ge=0)
    prune_q: float = 0.05
    prune_trials: int = Field(default=5, ge=0)
    learn_temperature: float = Field(default=0.3, ge=0.0)
    create_temperature: float = Field(default=0.4, ge=0.0)
    refine_temperature: float = Field(default=0.3, ge=0.0)
    caps: OperatorSettings = Field(default_factory=OperatorSettings)
