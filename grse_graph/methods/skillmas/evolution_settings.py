"""The numbers of SkillMAS's evolution operators: the reference code's designer and forge
constants (spec skillmas.md §5.1-§5.5, §8) and the project's caps on the optimizer's output
(§9.2 row 24). Not part of the config file: SkillMAS is run with the code's values."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.methods.operators.base import OperatorSettings


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
