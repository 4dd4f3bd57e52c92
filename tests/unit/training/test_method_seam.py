"""The training package is method-agnostic: no module under grse_graph/training imports GRSE's
package, or any built-in method's own package (methods reach the loop through
`grse_graph.methods.base` and the registry), and what went through that seam instead (the
default method section, the records' diagnoses) behaves as before."""

from __future__ import annotations

import ast
from pathlib import Path

from grse_graph.methods.base import CitedDiagnosis, CreditRecord
from grse_graph.methods.grse.critic_schema import CheckedDiagnosis, CritiqueResult
from grse_graph.methods.grse.method import CritiqueRecord, GrseSettings
from grse_graph.methods.plan import AgentFeedback, FailureDiagnosis
from grse_graph.methods.registry import BUILTIN_METHODS, DEFAULT_METHOD, default_section
from grse_graph.training.config import TrainConfig

PACKAGE_ROOT = Path(__file__).resolve().parents[3]
TRAINING = PACKAGE_ROOT / "grse_graph" / "training"
GRSE_PACKAGE = "grse_graph.methods.grse"
METHOD_PACKAGES = frozenset(
    {GRSE_PACKAGE, *(cls.__module__.rpartition(".")[0] for cls in BUILTIN_METHODS.values())}
)
"""GRSE's package and every built-in method's (each method class lives in `<package>.method`)."""


def _package_of(path: Path) -> str:
    """The package a module file's relative imports resolve against."""
    parts = path.relative_to(PACKAGE_ROOT).with_suffix("").parts
    return ".".join(parts[:-1])


def _imported(source: str, package: str) -> set[str]:
    """Every module `source` (a module of `package`) imports, relative imports resolved; for
    `from X import y` also `X.y`, since y may be a submodule (`from grse_graph.methods import
    grse`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _forbidden(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in METHOD_PACKAGES)


def test_the_import_walk_sees_every_spelling_of_the_forbidden_import() -> None:
    spellings = {
        "import grse_graph.methods.grse.method": "grse_graph.methods.grse.method",
        "from grse_graph.methods import grse": "grse_graph.methods.grse",
        "from ...methods.grse.method import CritiqueRecord": "grse_graph.methods.grse.method",
        "from ...methods import grse": "grse_graph.methods.grse",
    }
    for line, module in spellings.items():
        assert module in _imported(line, "grse_graph.training.nodes"), line
    assert not any(_forbidden(n) for n in _imported("from ..methods import base", "grse_graph"))
    assert not _forbidden("grse_graph.methods.grsex")
    assert {"grse_graph.methods.maskills", "grse_graph.methods.skillmas"} < METHOD_PACKAGES


def test_no_training_module_imports_grse_or_another_methods_package() -> None:
    modules = sorted(TRAINING.rglob("*.py"))
    assert modules, "no training modules found"
    offenders = [
        f"{path.relative_to(PACKAGE_ROOT)}: {name}"
        for path in modules
        for name in sorted(_imported(path.read_text(encoding="utf-8"), _package_of(path)))
        if _forbidden(name)
    ]
    assert offenders == []


def test_a_config_without_a_method_gets_the_default_methods_section() -> None:
    config = TrainConfig(task="demo")
    assert DEFAULT_METHOD == "grse"
    assert isinstance(config.method, GrseSettings)
    assert config.method == default_section() == GrseSettings()
    # The section on disk is the one written before the registry chose it.
    assert TrainConfig.model_validate_json(config.model_dump_json()) == config


def _diagnosis(agent: str) -> FailureDiagnosis:
    return FailureDiagnosis(
        agent=agent,
        skill_id=None,
        failure_type="answer_format",
        failed_refs=["r1.s2"],
        successful_refs=[],
        explanation="Wrote a sentence.",
        correction="Write the entity only.",
        action="induce",
    )


def test_credit_records_offer_diagnoses_and_feedback_through_the_base_hooks() -> None:
    fields = {
        "iteration": 1,
        "unit_id": "u",
        "question_id": "q",
        "rollout_ids": ["r1"],
        "rewards": [0.0],
    }
    plain = CreditRecord(method="other", **fields)
    assert plain.cited_diagnoses() == [] and plain.feedback_for("reasoner") == []
    kept = CheckedDiagnosis(diagnosis=_diagnosis("reasoner"), status="accepted", is_hypothesis=True)
    dropped = CheckedDiagnosis(diagnosis=_diagnosis("retriever"), status="dropped")
    critique = CritiqueRecord(
        **fields,
        advantages=[0.0],
        result=CritiqueResult(
            question_id="q",
            diagnoses=[kept, dropped],
            agent_feedback=[
                AgentFeedback(agent="reasoner", feedback="too long", missing_capability=""),
                AgentFeedback(agent="retriever", feedback="no quote", missing_capability=""),
            ],
        ),
    )
    assert critique.cited_diagnoses() == [
        CitedDiagnosis(diagnosis=_diagnosis("reasoner"), is_hypothesis=True)
    ]
    assert critique.feedback_for("reasoner") == ["too long"]
    unsent = CritiqueRecord(**fields, advantages=[0.0], kept=False)
    assert unsent.cited_diagnoses() == [] and unsent.feedback_for("reasoner") == []
