"""GRSE credit: group advantages, the group-relative critic with attribution checks, and the
aggregation of credits into edit directions and induction patterns (GUIDE §3).

The plan contract, the operators and the gate live in `grse_graph.methods`, because every
method shares them.
"""

from grse_graph.methods.grse.advantages import group_advantages, keep_group
from grse_graph.methods.grse.aggregate import AggregationSettings, aggregate
from grse_graph.methods.grse.checks import CheckContext, check_diagnosis, is_hypothesis
from grse_graph.methods.grse.critic import GroupCritic
from grse_graph.methods.grse.critic_schema import (
    CheckedDiagnosis,
    CriticOutput,
    CritiqueResult,
    StepRef,
    count_diagnoses,
)
from grse_graph.methods.grse.method import CritiqueRecord, GrseMethod, GrseSettings
from grse_graph.methods.grse.payload import CriticPayload, PayloadLimits, build_critic_payload

__all__ = [
    "AggregationSettings",
    "CheckContext",
    "CheckedDiagnosis",
    "CriticOutput",
    "CriticPayload",
    "CritiqueRecord",
    "CritiqueResult",
    "GroupCritic",
    "GrseMethod",
    "GrseSettings",
    "PayloadLimits",
    "StepRef",
    "aggregate",
    "build_critic_payload",
    "check_diagnosis",
    "count_diagnoses",
    "group_advantages",
    "is_hypothesis",
    "keep_group",
]
