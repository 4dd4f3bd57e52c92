"""Issue 26 point 6: the project's own additions (the memorisation check on drafts, the output
contrast in induction evidence, the tool-error rule for tool_failure) are recorded settings,
and paper mode turns them all off and is recorded in the run's config."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from grse_graph.errors import ConfigError
from grse_graph.methods.grse.checks import CheckContext, check_diagnosis
from grse_graph.methods.grse.critic import GroupCritic
from grse_graph.methods.grse.method import GrseSettings
from grse_graph.methods.registry import METHOD_NAMES
from grse_graph.training.config import TrainConfig, protocol_train_config
from grse_graph.training.context import TrainingContext
from grse_graph.training.nodes.evolution import memorisation_check
from grse_graph.training.run_folder import RunFolder
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.grse_methods_builders import (
    credit,
    diagnosis,
    library,
    question,
    skill,
    two_agent_rollout,
)

LIBS = {"reader": library("reader", skill("extract")), "answerer": library("answerer")}
ROLLOUTS = [two_agent_rollout(0, 1.0), two_agent_rollout(1, 0.0)]


def build(**values: Any) -> TrainConfig:
    return protocol_train_config({"task": "demo", **values}, "test", training_top_k=20)


def test_the_additions_are_recorded_settings_on_by_default(tmp_path: Path) -> None:
    config = build()
    assert config.paper_mode is False and config.memorisation_check is True
    assert isinstance(config.method, GrseSettings)
    assert config.method.output_contrast is True and config.method.tool_error_rule is True
    run = RunFolder(tmp_path / "run")
    run.write_config(config)
    stored = (tmp_path / "run" / "config.json").read_text()
    for name in ("paper_mode", "memorisation_check", "output_contrast", "tool_error_rule"):
        assert f'"{name}"' in stored


def test_paper_mode_turns_every_addition_off_and_the_run_records_it(tmp_path: Path) -> None:
    config = build(paper_mode=True)
    assert config.memorisation_check is False
    assert isinstance(config.method, GrseSettings)
    assert config.method.output_contrast is False and config.method.tool_error_rule is False
    run = RunFolder(tmp_path / "run")
    run.write_config(config)
    assert run.read_config() == config
    assert run.read_config().paper_mode is True
    # One addition may be switched off alone, outside paper mode.
    assert build(memorisation_check=False).method == GrseSettings()
    assert build(method={"name": "grse", "output_contrast": False}).memorisation_check is True


def test_paper_mode_refuses_an_addition_switched_on() -> None:
    with pytest.raises(ConfigError, match=r"paper_mode.*memorisation_check"):
        build(paper_mode=True, memorisation_check=True)
    with pytest.raises(ConfigError, match=r"paper_mode.*tool_error_rule"):
        build(paper_mode=True, method={"name": "grse", "tool_error_rule": True})


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_paper_mode_runs_every_method(method: str) -> None:
    config = build(paper_mode=True, method=method)
    assert config.paper_mode and not config.memorisation_check


def test_a_method_that_writes_no_draft_refuses_the_memorisation_setting() -> None:
    # SkillMAS proposes its libraries itself: no operator draft is checked.
    with pytest.raises(ConfigError, match="skillmas does not read setting 'memorisation_check'"):
        build(method="skillmas", memorisation_check=False)


def test_no_memorisation_check_is_built_when_it_is_off() -> None:
    ctx = cast(TrainingContext, SimpleNamespace(config=build(memorisation_check=False)))
    assert memorisation_check(ctx, 1) is None


def critique(settings: GrseSettings, diagnoses: list) -> Any:
    reply = tool_call_message(
        "CriticOutput",
        {
            "credits": [credit().model_dump(mode="json")],
            "agent_feedback": [],
            "diagnoses": [d.model_dump(mode="json") for d in diagnoses],
        },
    )
    provider = FakeProvider({"critic": ScriptedChatModel([reply, reply])})
    critic = GroupCritic(
        provider, output_contrast=settings.output_contrast, tool_error_rule=settings.tool_error_rule
    )
    return asyncio.run(critic.critique(question(), LIBS, ROLLOUTS, [1.0, -1.0]))


def test_the_output_contrast_is_added_to_induction_evidence_only_when_on() -> None:
    on = critique(GrseSettings(), [diagnosis()])
    assert on.diagnoses[0].contrast is not None
    off = critique(GrseSettings(output_contrast=False), [diagnosis()])
    assert off.counts.accepted == 1 and off.diagnoses[0].contrast is None


def test_the_tool_error_rule_checks_tool_failure_only_when_on() -> None:
    # The fixture's grep call returned no error: the project's rule refuses tool_failure.
    d = diagnosis(failure_type="tool_failure", action="no_edit", skill_id=None)
    ctx = CheckContext.build(ROLLOUTS, {a: lib.names() for a, lib in LIBS.items()})
    assert any("tool_failure" in v for v in check_diagnosis(d, ctx))
    assert check_diagnosis(d, ctx, tool_error_rule=False) == []
    off = critique(GrseSettings(tool_error_rule=False), [d])
    assert off.counts.accepted == 1
