"""Counterfactual skill probes: each skill's effect on reward, measured by execution.

`SkillProber` runs a team greedily on the same questions with its full libraries and with
skills masked (`plan_probes`: leave-one-out or random masks within a budget of team runs),
reusing unchanged agents' outputs, and reads each skill's paired reward difference with a
bootstrap interval (`SkillEffect`). `grse skills audit` reports it; training can take it as
credit beside the critic's (`TrainConfig.probe`, `grse_graph.probes.credit`).
"""

from .design import (
    ProbeDesign,
    ProbeError,
    ProbePlan,
    ProbeRequest,
    ProbeSettings,
    SkillRef,
    libraries_hash,
    masked_libraries,
    plan_probes,
)
from .effects import EffectVerdict, ProbeOutcome, SkillEffect, bootstrap_interval, skill_effect
from .runner import PROBES_FILE, ProbeResult, ProbeRun, ProbeStore, SkillProber

__all__ = [
    "PROBES_FILE",
    "EffectVerdict",
    "ProbeDesign",
    "ProbeError",
    "ProbeOutcome",
    "ProbePlan",
    "ProbeRequest",
    "ProbeResult",
    "ProbeRun",
    "ProbeSettings",
    "ProbeStore",
    "SkillEffect",
    "SkillProber",
    "SkillRef",
    "bootstrap_interval",
    "libraries_hash",
    "masked_libraries",
    "plan_probes",
    "skill_effect",
]
