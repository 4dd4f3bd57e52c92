"""SkillMAS's section of `TrainConfig` (spec skillmas.md §8 for the code's values, §9.2 for the
QA defaults; docs/SKILLMAS.md records every choice).

Loop-level settings are shared: `iterations` is the number of rounds R (5, GRSE's T),
`batch_size` the size of the fixed train subset drawn once (in proportion to category) and
reused every round, `library_limit` the per-agent limit L (active + shadow skills).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grse_graph.methods.base import MethodSettings

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
