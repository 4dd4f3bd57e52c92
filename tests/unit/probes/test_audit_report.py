"""The audit's files (`grse_graph.probes.report`): the record schema `--json` prints, audit.json,
report.md and effects.png, from a probe run on a fake model where one skill helps, one hurts
and one does nothing (no engine)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool

from grse_graph.llm.provider import RoleName, SamplingSettings
from grse_graph.probes import ProbeResult, ProbeSettings, ProbeStore, SkillEffect, SkillProber
from grse_graph.probes.report import (
    AUDIT_FILE,
    CHART_FILE,
    REPORT_FILE,
    AuditRecord,
    AuditReport,
    audit_markdown,
    effects_chart_png,
    write_audit,
)
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.tasks.base import ScoredAnswer, TaskQuestion
from grse_graph.team import default_team

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RECORD_FIELDS = {"agent", "skill", "effect", "low", "high", "questions", "invocations", "verdict"}
VERDICTS = {"helps", "hurts", "no effect"}


class MarkerTask:
    """Passage questions scored by two words of the answer: `good` adds 0.5 and `bad` takes
    0.5 away from a base of 0.5, so a skill that makes the model say one of them moves the
    reward by exactly that much."""

    name = "marker"
    kind = "passages"

    def __init__(self, questions: int = 3) -> None:
        self.categories: list[str] = []
        self._questions = [
            TaskQuestion(id=f"q{i}", question=f"Which word fits item {i}?", answer="good")
            for i in range(questions)
        ]

    def splits(self) -> Mapping[str, Sequence[TaskQuestion]]:
        return {"validation": self._questions}

    def split(self, name: str) -> Sequence[TaskQuestion]:
        return self.splits()[name]

    def render_input(self, question: TaskQuestion) -> str:
        return f"Question: {question.question}"

    def render_full_context(self, question: TaskQuestion) -> str:
        return ""

    def agent_tools(
        self, question: TaskQuestion, agent_name: str, position: int | None = None
    ) -> list[BaseTool]:
        return []

    def score(self, question: TaskQuestion, prediction: str) -> ScoredAnswer:
        words = prediction.lower().split()
        reward = min(1.0, max(0.0, 0.5 + 0.5 * ("good" in words) - 0.5 * ("bad" in words)))
        return ScoredAnswer(reward=reward, metrics={"reward": reward})


class MarkerModel(BaseChatModel):
    """Says `good` when a skill body with `token-good` is in its system prompt and `bad` when
    one with `token-bad` is; anything else it ignores."""

    @property
    def _llm_type(self) -> str:
        return "marker-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> MarkerModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        system = str(messages[0].content) if messages else ""
        words = [w for w, mark in (("good", "token-good"), ("bad", "token-bad")) if mark in system]
        reply = AIMessage(content=f"Answer: {' '.join(words) or 'plain'}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


class MarkerProvider:
    """A `ChatModelProvider` handing out `MarkerModel`s."""

    def chat(
        self,
        role: RoleName,
        *,
        sampling: SamplingSettings | None = None,
        max_tokens: int | None = None,
    ) -> BaseChatModel:
        return MarkerModel()


def marker_library() -> SkillLibrary:
    skills = [
        Skill.build(name="say-good", description="Use for every answer.", body="token-good"),
        Skill.build(name="say-bad", description="Use for every answer.", body="token-bad"),
        Skill.build(name="say-nothing", description="Use for every answer.", body="Be brief."),
    ]
    return SkillLibrary.build("reasoner", skills)


def probe(folder: Path, questions: int = 3) -> ProbeResult:
    task = MarkerTask(questions)
    team = default_team(task, {"reasoner": marker_library()})
    prober = SkillProber(
        task, team, MarkerProvider(), ProbeSettings(budget=120), store=ProbeStore(folder)
    )
    return asyncio.run(prober.run(task.split("validation")))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> AuditReport:
    result = probe(tmp_path_factory.mktemp("probe"))
    return AuditReport.from_result(result, task="marker", split="validation")


def test_records_have_exactly_the_audit_fields_and_types(report: AuditReport) -> None:
    records = json.loads(json.dumps(report.records_json()))
    assert isinstance(records, list) and len(records) == 3
    for record in records:
        assert set(record) == RECORD_FIELDS
        assert isinstance(record["agent"], str) and isinstance(record["skill"], str)
        for field in ("effect", "low", "high"):
            assert record[field] is None or isinstance(record[field], float)
        assert isinstance(record["questions"], int) and not isinstance(record["questions"], bool)
        assert record["invocations"] is None or isinstance(record["invocations"], int)
        assert record["verdict"] in VERDICTS
    assert set(AuditRecord.model_fields) == RECORD_FIELDS


def test_the_probe_finds_the_skill_that_helps_and_the_one_that_hurts(report: AuditReport) -> None:
    by_skill = {r.skill: r for r in report.effects}
    assert by_skill["say-good"].verdict == "helps"
    assert (by_skill["say-good"].effect or 0.0) > 0.0
    assert by_skill["say-bad"].verdict == "hurts"
    assert (by_skill["say-bad"].effect or 0.0) < 0.0
    assert by_skill["say-nothing"].verdict == "no effect"
    assert by_skill["say-nothing"].effect == pytest.approx(0.0)
    assert all(r.agent == "reasoner" and r.questions == 3 for r in report.effects)
    # Inline skills leave no load to count.
    assert all(r.invocations is None for r in report.effects)
    header = report.header
    assert header.design == "leave_one_out" and header.runs == 3 * (3 + 1)
    assert header.runs_resumed == 0 and header.runs_failed == 0
    assert header.full_reward == pytest.approx(0.5)
    # The retriever's prompt does not change when a reasoner skill is masked: it is replayed.
    assert header.reused_steps > 0


def test_a_leave_one_out_effect_is_the_full_run_minus_the_run_without_it(
    report: AuditReport,
) -> None:
    by_skill = {r.skill: r for r in report.effects}
    assert by_skill["say-good"].effect == pytest.approx(0.5)
    assert by_skill["say-bad"].effect == pytest.approx(-0.5)


def test_audit_files_are_written_and_read_back(report: AuditReport, tmp_path: Path) -> None:
    paths = write_audit(report, tmp_path / "audit")
    assert set(paths) == {AUDIT_FILE, REPORT_FILE, CHART_FILE}
    document = json.loads(paths[AUDIT_FILE].read_text(encoding="utf-8"))
    assert set(document) == {"header", "effects"}
    assert {
        "task",
        "split",
        "questions",
        "design",
        "budget",
        "runs",
        "runs_resumed",
        "runs_failed",
        "model_steps",
        "reused_steps",
        "full_reward",
        "elapsed_s",
    } <= set(document["header"])
    assert document["effects"] == report.records_json()
    assert AuditReport.model_validate_json(paths[AUDIT_FILE].read_text()) == report
    assert paths[CHART_FILE].read_bytes().startswith(PNG_SIGNATURE)
    markdown = paths[REPORT_FILE].read_text(encoding="utf-8")
    assert "| agent | skill | effect | 95% interval | questions | invocations | verdict |" in (
        markdown
    )
    for r in report.effects:
        row = f"| {r.agent} | {r.skill} | {r.effect:+.3f} | [{r.low:+.3f}, {r.high:+.3f}] | 3 | - |"
        assert f"{row} {r.verdict} |" in markdown
    assert "- plan: leave-one-out on 3 questions, 3 skills: 12 team runs of a budget of 120" in (
        markdown
    )
    assert "- cost: 12 runs made, 0 resumed, 0 failed;" in markdown
    assert f"]({CHART_FILE})" in markdown


def test_a_second_probe_resumes_every_run(tmp_path: Path) -> None:
    first = probe(tmp_path)
    again = probe(tmp_path)
    assert again.runs_resumed == again.runs == first.runs
    assert [e.effect for e in again.effects] == [e.effect for e in first.effects]


def test_a_skill_without_a_paired_question_is_reported_without_numbers(tmp_path: Path) -> None:
    report = AuditReport.from_result(
        ProbeResult(
            design="random_masks",
            questions=["a", "b"],
            budget=10,
            runs=10,
            runs_resumed=0,
            runs_failed=10,
            full_reward=None,
            effects=[SkillEffect(agent="retriever", skill="lost", effect=None, questions=0)],
        ),
        task="demo",
        split="validation",
    )
    assert report.records_json() == [
        {
            "agent": "retriever",
            "skill": "lost",
            "effect": None,
            "low": None,
            "high": None,
            "questions": 0,
            "invocations": None,
            "verdict": "no effect",
        }
    ]
    assert "| retriever | lost | - | - | 0 | - | no effect |" in audit_markdown(report)
    assert effects_chart_png(report).startswith(PNG_SIGNATURE)
