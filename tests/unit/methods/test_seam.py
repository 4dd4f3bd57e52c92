"""The credit-method seam: registry, settings sections, GRSE's credit units, utility rules and
the operator registry."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Literal

import pytest

from grse_graph.errors import ConfigError
from grse_graph.methods.base import (
    BaseCreditMethod,
    CreditInputs,
    CreditRecord,
    CreditUnit,
    ExternalMethodSettings,
    MethodSettings,
    QuestionRollouts,
)
from grse_graph.methods.grse.method import CritiqueRecord, GrseMethod, GrseSettings
from grse_graph.methods.operators import OPERATORS, OperatorContext, OperatorSchedule, evolve
from grse_graph.methods.operators.base import OperatorOutput
from grse_graph.methods.plan import AggregationResult, EditDirection
from grse_graph.methods.registry import BUILTIN_METHODS, create_method, method_class
from grse_graph.methods.rounds import UpdateInputs
from grse_graph.methods.utility import MovingAverageUtilities, bookkeeping, replace_utilities
from grse_graph.skills import SkillLibrary
from tests.fakes import FakeProvider
from tests.unit.methods.grse_methods_builders import library, skill


class EchoSettings(MethodSettings):
    name: Literal["echo"] = "echo"
    rollouts: int = 3


class EchoRecord(CreditRecord):
    method: Literal["echo"] = "echo"


class EchoMethod(BaseCreditMethod[EchoSettings, EchoRecord]):
    name = "echo"
    settings_type = EchoSettings
    record_type = EchoRecord

    def rollouts_per_question(self) -> int:
        return self.settings.rollouts

    async def credit(self, unit: CreditUnit, inputs: CreditInputs) -> EchoRecord:
        return EchoRecord(**self.base_fields(unit, inputs))

    async def plan(self, inputs: UpdateInputs) -> AggregationResult:
        return AggregationResult()


def test_registry_creates_builtin_methods_and_names_the_known_ones_otherwise() -> None:
    method = create_method(GrseSettings(group_size=3))
    assert isinstance(method, GrseMethod)
    assert method.rollouts_per_question() == 3
    assert method_class("grse") is GrseMethod
    with pytest.raises(ConfigError, match=r"unknown training method 'nosuch' \(known: grse"):
        create_method(ExternalMethodSettings(name="nosuch"))


def test_an_external_section_is_validated_by_its_own_method() -> None:
    methods = {**BUILTIN_METHODS, "echo": EchoMethod}
    method = create_method(ExternalMethodSettings(name="echo", rollouts=2), methods)
    assert isinstance(method.settings, EchoSettings)
    assert method.rollouts_per_question() == 2
    with pytest.raises(ConfigError, match="method echo: rollouts"):
        create_method(ExternalMethodSettings(name="echo", rollouts="many"), methods)


def test_default_units_are_one_per_rollout_with_ids_naming_the_rollout() -> None:
    method = EchoMethod(EchoSettings())
    groups = [
        QuestionRollouts(question_id="q", rollout_ids=["it1-q-g0", "it1-q-g1"], rewards=[0, 1])
    ]
    chosen = method.credit_units(1, groups)
    assert [(u.unit_id, u.rollout_ids) for u in chosen.units] == [
        ("it1-q-g0-credit", ["it1-q-g0"]),
        ("it1-q-g1-credit", ["it1-q-g1"]),
    ]
    assert chosen.skipped == []


def test_grse_credits_one_unit_per_kept_group_and_records_filtered_groups() -> None:
    method = GrseMethod(GrseSettings(group_size=2, dapo_filter=True))
    groups = [
        QuestionRollouts(question_id="a", rollout_ids=["it2-a-g0", "it2-a-g1"], rewards=[0, 1]),
        QuestionRollouts(question_id="b", rollout_ids=["it2-b-g0", "it2-b-g1"], rewards=[1, 1]),
    ]
    chosen = method.credit_units(2, groups)
    assert [u.unit_id for u in chosen.units] == ["it2-a-critic"]
    (skipped,) = chosen.skipped
    assert isinstance(skipped, CritiqueRecord)
    assert (skipped.unit_id, skipped.kept, skipped.advantages, skipped.result) == (
        "it2-b-critic",
        False,
        [0.0, 0.0],
        None,
    )
    assert skipped.method == "grse"


def test_a_credit_record_line_without_a_method_field_is_grse() -> None:
    line = (
        '{"iteration":1,"unit_id":"it1-q-critic","question_id":"q","rollout_ids":["r"],'
        '"rewards":[1.0],"advantages":[0.0],"kept":true,"result":null,"error":null}'
    )
    record = CritiqueRecord.model_validate_json(line)
    assert record.method == "grse"
    with pytest.raises(ValueError, match="method"):
        EchoRecord.model_validate_json(record.model_dump_json())


def _direction(skill_id: str, utility: float, mean: float | None = None) -> EditDirection:
    return EditDirection(
        agent="reader",
        skill_id=skill_id,
        summary="s",
        utility=utility,
        verdict="keep",
        credit_utility_mean=mean,
    )


def _libraries() -> dict[str, SkillLibrary]:
    return {
        "reader": library(
            "reader",
            skill("a").with_utility(0.5),
            skill("b").with_utility(0.1),
            skill("c"),  # new: no utility recorded yet
        )
    }


def test_replace_sets_the_direction_utility_and_leaves_uncredited_skills() -> None:
    plan = AggregationResult(directions=[_direction("a", -0.4), _direction("gone", 1.0)])
    out = replace_utilities(_libraries(), plan)["reader"]
    assert [out.get(n).utility for n in ("a", "b", "c")] == [-0.4, 0.1, None]


def test_moving_average_keeps_60_percent_uncredited_unchanged_new_from_zero() -> None:
    plan = AggregationResult(
        directions=[
            _direction("a", utility=0.9, mean=0.2),  # the credits' mean, not the merged utility
            _direction("c", utility=-0.5),  # no mean recorded: the direction's utility
        ]
    )
    out = MovingAverageUtilities(keep=0.6)(_libraries(), plan)["reader"]
    assert out.get("a").utility == pytest.approx(0.6 * 0.5 + 0.4 * 0.2)
    assert out.get("b").utility == 0.1
    assert out.get("c").utility == pytest.approx(0.4 * -0.5)
    assert out.content_hash() == _libraries()["reader"].content_hash()  # bookkeeping only


def test_bookkeeping_adds_invocations_then_applies_the_rule() -> None:
    plan = AggregationResult(
        directions=[_direction("a", 0.3)], invocations={"reader": {"a": 2, "b": 1, "x": 5}}
    )
    once = bookkeeping(_libraries(), plan, replace_utilities)["reader"]
    twice = bookkeeping({"reader": once}, plan, replace_utilities)["reader"]
    assert [once.get(n).invocations for n in ("a", "b", "c")] == [2, 1, 0]
    assert twice.get("a").invocations == 4
    assert once.get("a").utility == 0.3


def test_evolve_runs_the_methods_order_and_looks_operators_up_by_name() -> None:
    calls: list[str] = []

    def recording(name: str):
        async def operator(
            libraries: Mapping[str, SkillLibrary], plan: AggregationResult, ctx: OperatorContext
        ) -> OperatorOutput:
            calls.append(name)
            return dict(libraries), []

        return operator

    operators = {name: recording(name) for name in OPERATORS}
    result = asyncio.run(
        evolve(
            _libraries(),
            AggregationResult(),
            iteration=2,
            schedule=OperatorSchedule(),  # every operator runs at iteration 2
            library_limit=4,
            provider=FakeProvider(),
            order=("prune", "induce", "refine"),
            operators=operators,
        )
    )
    assert calls == ["prune", "induce", "refine"]  # consolidate is not in the order
    assert result.operators == ["prune", "induce", "refine"]
    assert result.changed_agents == []
