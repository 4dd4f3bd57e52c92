"""GRSE credit: group advantages, the group-relative critic with attribution checks, and the
aggregation of credits into edit directions and induction patterns (GUIDE §3).

Modules: `advantages`, `schema` (every typed value), `payload`, `checks`, `critic`,
`aggregate`, `prompts`. Evolution operators live in `grse_graph.methods.operators` and the gate
in `grse_graph.methods.gate`, because the baselines share them.
"""

from grse_graph.methods.grse.advantages import group_advantages, keep_group
from grse_graph.methods.grse.aggregate import AggregationSettings, aggregate
from grse_graph.methods.grse.checks import CheckContext, check_diagnosis, is_hypothesis
from grse_graph.methods.grse.critic import GroupCritic
from grse_graph.methods.grse.payload import CriticPayload, PayloadLimits, build_critic_payload
from grse_graph.methods.grse.schema import (
    AggregationResult,
    AnchoredEdit,
    CheckedDiagnosis,
    CriticOutput,
    CritiqueResult,
    DiagnosisCounts,
    EditDirection,
    EvolutionResult,
    FailureDiagnosis,
    GateDecision,
    InductionPattern,
    OperatorRecord,
    SkillCredit,
    StepRef,
)

__all__ = [
    "AggregationResult",
    "AggregationSettings",
    "AnchoredEdit",
    "CheckContext",
    "CheckedDiagnosis",
    "CriticOutput",
    "CriticPayload",
    "CritiqueResult",
    "DiagnosisCounts",
    "EditDirection",
    "EvolutionResult",
    "FailureDiagnosis",
    "GateDecision",
    "GroupCritic",
    "InductionPattern",
    "OperatorRecord",
    "PayloadLimits",
    "SkillCredit",
    "StepRef",
    "aggregate",
    "build_critic_payload",
    "check_diagnosis",
    "group_advantages",
    "is_hypothesis",
    "keep_group",
]
