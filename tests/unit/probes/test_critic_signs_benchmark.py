"""`benchmarks/critic_signs.py` without an engine: a small GRSE run folder written through the
package's own stores (two groups of the demo's planted libraries, the run's critic credits and
a probe of those libraries), replayed to scripted critics on the fake OpenAI server, and the
one-line errors of a run folder without groups or effects."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from grse_graph.llm import load_config
from grse_graph.methods.grse.advantages import DEFAULT_EPS, group_advantages
from grse_graph.methods.grse.critic_schema import CritiqueResult
from grse_graph.methods.grse.method import CritiqueRecord, critic_unit_id
from grse_graph.methods.plan import SkillCredit
from grse_graph.probes import ProbeResult, SkillEffect
from grse_graph.probes.report import AuditHeader, AuditRecord, AuditReport
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.planted import demo_planted
from grse_graph.tasks.registry import load_task
from grse_graph.team.rollout import Rollout, Step
from grse_graph.training.demo import repair_config
from grse_graph.training.ids import rollout_unit_id
from grse_graph.training.records import ProbeRecord, RolloutRecord
from grse_graph.training.run_folder import RunFolder
from tests.fakeserver import FakeOpenAIServer, deterministic_reply, forced_tool

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "benchmarks" / "critic_signs.py"

AGENT_OF = {entry.skill: entry.agent for entry in demo_planted().skills}
MEASURED: dict[str, tuple[float, float, float]] = {
    "yes-no-candidate": (0.15, 0.05, 0.30),  # helps
    "leave-answer-open": (-0.12, -0.25, -0.02),  # hurts
    "candidate-span": (0.01, -0.05, 0.08),  # no effect
    "answer-confidence": (-0.09, -0.18, -0.01),  # hurts
}
RIGHT = {
    "yes-no-candidate": 0.7,
    "leave-answer-open": -0.6,
    "candidate-span": 0.2,
    "answer-confidence": -0.8,
}
RECORDED_CREDITS = {"yes-no-candidate": 0.5, "leave-answer-open": 0.3}
"""The run's own critic: one right sign, one wrong, answer-confidence silent."""


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("critic_signs_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: pydantic and dataclasses resolve its annotations through it.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _verdict(low: float, high: float) -> Any:
    return "helps" if low > 0 else "hurts" if high < 0 else "no effect"


def _credit(skill: str, utility: float) -> dict[str, Any]:
    return {
        "agent": AGENT_OF[skill],
        "skill_id": skill,
        "evidence": "r1.s1 and r2.s1 differ in the candidate line.",
        "verdict": "helped" if utility > 0 else "harmful",
        "utility": utility,
        "suggested_refinement": "",
        "redundant_with": [],
        "conflicts_with": [],
    }


def _write_run(root: Path, *, groups: bool = True, probe: bool = True) -> Path:
    """Two groups of G = 4 (rewards 0, 1, 0, 1) of iteration 1 under the planted libraries."""
    config = repair_config(demo_planted())
    run = RunFolder(root)
    run.write_config(config)
    libraries = {
        agent: SkillLibrary.load(Path(folder), agent=agent)
        for agent, folder in config.init_libraries.items()
    }
    for agent, library in libraries.items():
        run.save_library(run.library_dir(0, agent), library)
    hashes = {agent: library.content_hash() for agent, library in libraries.items()}
    questions = [q for q in load_task("demo").split("train")][:2] if groups else []
    for question in questions:
        rollouts = []
        for g in range(4):
            steps = [
                Step(
                    index=i,
                    agent=agent,
                    system_prompt=f"You are the {agent}.",
                    input=question.question,
                    output=f"Answer: {'right' if g % 2 else 'wrong'} ({agent})",
                    skills_present=libraries[agent].names(),
                )
                for i, agent in enumerate(("retriever", "reasoner"))
            ]
            unit_id = rollout_unit_id(1, question.id, g)
            rollout = Rollout(
                rollout_id=unit_id,
                question_id=question.id,
                group_index=g,
                steps=steps,
                answer="right" if g % 2 else "wrong",
                reward=float(g % 2),
            )
            rollouts.append(rollout)
            run.rollouts.append(
                RolloutRecord(
                    iteration=1,
                    unit_id=unit_id,
                    question_id=question.id,
                    group_index=g,
                    seed=None,
                    library_hashes=hashes,
                    rollout=rollout,
                )
            )
        rewards = [r.reward for r in rollouts]
        credits = [SkillCredit(**_credit(s, u)) for s, u in RECORDED_CREDITS.items()]
        run.credits(CritiqueRecord).append(
            CritiqueRecord(
                iteration=1,
                unit_id=critic_unit_id(1, question.id),
                question_id=question.id,
                rollout_ids=[r.rollout_id for r in rollouts],
                rewards=rewards,
                advantages=group_advantages(rewards, DEFAULT_EPS),
                result=CritiqueResult(question_id=question.id, credits=credits),
            )
        )
    if probe:
        effects = [
            SkillEffect(
                agent=AGENT_OF[skill],
                skill=skill,
                effect=effect,
                low=low,
                high=high,
                questions=24,
                verdict=_verdict(low, high),
            )
            for skill, (effect, low, high) in MEASURED.items()
        ]
        result = ProbeResult(
            design="leave_one_out",
            questions=[f"q{i}" for i in range(24)],
            budget=120,
            runs=120,
            runs_resumed=0,
            full_reward=0.5,
            effects=effects,
            confidence=0.8,
        )
        run.probe_results.append(ProbeRecord(iteration=1, result=result))
    return root


def scripted_critic(utilities: Mapping[str, float]) -> Callable[..., list[dict[str, Any]]]:
    """A critic that credits each skill of `utilities` with its utility, and diagnoses the
    failed first rollout's retriever step as uncertain (other requests: the default reply)."""

    def reply(body: Mapping[str, Any], fingerprint: str) -> list[dict[str, Any]]:
        tool = forced_tool(body)
        if tool is None or tool["name"] not in ("CriticOutput", "CriticRepair"):
            return deterministic_reply(body, fingerprint)
        diagnosis = {
            "agent": "retriever",
            "skill_id": None,
            "failure_type": "uncertain_attribution",
            "failed_refs": ["r1.s1"],
            "successful_refs": [],
            "explanation": "The group does not show which skill made r1 fail.",
            "correction": "",
            "action": "no_edit",
        }
        credits = [_credit(skill, utility) for skill, utility in utilities.items()]
        arguments = (
            {"credits": credits, "agent_feedback": [], "diagnoses": [diagnosis]}
            if tool["name"] == "CriticOutput"
            else {"diagnoses": [diagnosis], "credits": []}
        )
        call = {
            "id": f"call_{fingerprint[:8]}",
            "type": "function",
            "function": {"name": tool["name"], "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return [{"index": 0, "message": message, "finish_reason": "tool_calls"}]

    return reply


def _replay(bench: ModuleType, run: Path, utilities: Mapping[str, float]) -> Any:
    recorded = bench.load_recorded(run)
    with FakeOpenAIServer(reply=scripted_critic(utilities)) as server:
        llm = load_config(env=server.env())
        result = bench.replay_score(recorded, llm, label="scripted")
        counts = server.counts()
    # The replay calls the critic role only, once per group at least.
    assert counts["critic"] >= len(recorded.groups) == 2
    assert counts["actor"] == counts["optimizer"] == 0
    assert result.usage["roles"]["critic"]["calls"] == counts["critic"]
    assert result.failed_groups == [0]
    return result


def test_a_critic_with_the_measured_signs_gets_every_sign_right(
    bench: ModuleType, tmp_path: Path
) -> None:
    result = _replay(bench, _write_run(tmp_path / "run"), RIGHT)
    assert result.summary.with_effect == 3
    assert (result.summary.right, result.summary.wrong, result.summary.silent) == (3, 0, 0)
    assert result.summary.separation == pytest.approx(0.7 - (-0.6 - 0.8) / 2)
    rows = {row.skill: row for row in result.skills}
    assert rows["answer-confidence"].u1 == [pytest.approx(-0.8)]
    assert rows["answer-confidence"].credits == [2]
    assert rows["candidate-span"].sign == "unscored"  # no effect: nothing to be right about
    assert rows["yes-no-candidate"].verdict == "helps"


def test_a_critic_with_the_opposite_signs_gets_none_right(
    bench: ModuleType, tmp_path: Path
) -> None:
    opposite = {skill: -utility for skill, utility in RIGHT.items()}
    result = _replay(bench, _write_run(tmp_path / "run"), opposite)
    assert (result.summary.right, result.summary.wrong, result.summary.silent) == (0, 3, 0)
    assert result.summary.separation == pytest.approx(-0.7 - (0.6 + 0.8) / 2)
    assert {row.sign for row in result.skills if row.verdict != "no effect"} == {"wrong"}


def test_a_critic_that_credits_nothing_is_silent(bench: ModuleType, tmp_path: Path) -> None:
    result = _replay(bench, _write_run(tmp_path / "run"), {})
    assert (result.summary.right, result.summary.wrong, result.summary.silent) == (0, 0, 3)
    assert result.summary.separation is None
    assert all(row.u1 == [None] for row in result.skills)


def test_the_runs_own_critic_is_scored_from_its_records(bench: ModuleType, tmp_path: Path) -> None:
    recorded = bench.load_recorded(_write_run(tmp_path / "run"))
    result = bench.recorded_score(recorded)
    assert (result.summary.right, result.summary.wrong, result.summary.silent) == (1, 1, 1)
    assert result.summary.separation == pytest.approx(0.5 - 0.3)
    assert bench.load_recorded(tmp_path / "run", limit=1).groups[0].record.question_id == (
        recorded.groups[0].record.question_id
    )


def test_a_remote_critic_through_config_writes_its_scores(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _write_run(tmp_path / "run")
    out = tmp_path / "scores" / "signs.json"
    with FakeOpenAIServer(reply=scripted_critic(RIGHT)) as server:
        toml = tmp_path / "critic.toml"
        toml.write_text(
            f'[critic]\nbase_url = "{server.base_url("critic")}"\nmodel = "fake"\ntimeout_s = 5\n',
            encoding="utf-8",
        )
        bench.main([str(run), "--config", str(toml), "--out", str(out)])
    printed = capsys.readouterr()
    report = bench.CriticSignsReport.model_validate_json(out.read_text(encoding="utf-8"))
    assert [c.critic for c in report.critics] == [
        bench.RECORDED,
        "fake at " + server.base_url("critic") + " (critic.toml)",
    ]
    assert report.critics[1].summary.right == 3
    assert report.confidence == 0.8
    assert "signs right 3 of 3 with an effect" in printed.out
    assert "replay 1/1 group 2/2" in printed.err  # progress goes to stderr


def test_effects_from_an_audit_replace_the_probe(bench: ModuleType, tmp_path: Path) -> None:
    run = _write_run(tmp_path / "run", probe=False)
    # The audit says the opposite of the probe: the recorded critic's one wrong sign is right.
    records = [
        AuditRecord(
            agent=AGENT_OF[skill],
            skill=skill,
            effect=-effect,
            low=-high,
            high=-low,
            questions=12,
            invocations=None,
            verdict=_verdict(-high, -low),
        )
        for skill, (effect, low, high) in MEASURED.items()
    ]
    header = AuditHeader(
        task="demo",
        split="train",
        questions=["q1"],
        design="leave_one_out",
        budget=60,
        runs=60,
        runs_resumed=0,
        runs_failed=0,
        model_steps=0,
        reused_steps=0,
        full_reward=0.5,
        elapsed_s=1.0,
        confidence=0.9,
    )
    audit = tmp_path / "audit.json"
    audit.write_text(AuditReport(header=header, effects=records).model_dump_json(), "utf-8")
    recorded = bench.load_recorded(run, effects=audit)
    assert recorded.effects.confidence == 0.9
    summary = bench.recorded_score(recorded).summary
    assert (summary.right, summary.wrong, summary.silent) == (1, 1, 1)
    assert summary.separation == pytest.approx(0.3 - 0.5)
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps(AuditReport(header=header, effects=records).records_json()))
    assert bench.load_recorded(run, effects=listed).effects.confidence is None


@pytest.mark.parametrize(
    ("groups", "probe", "extra", "message"),
    [
        (False, True, [], "no groups of iteration 1"),
        (True, False, [], "no probe results of iteration 1"),
        (True, True, ["--iteration", "2"], "libraries/iter_1"),
        (True, True, ["--effects", "missing.json"], "no such file"),
        (True, True, ["--recorded-only", "--model", "medium"], "--recorded-only"),
    ],
)
def test_a_run_that_cannot_be_scored_is_one_line(
    bench: ModuleType,
    tmp_path: Path,
    groups: bool,
    probe: bool,
    extra: list[str],
    message: str,
) -> None:
    run = _write_run(tmp_path / "run", groups=groups, probe=probe)
    options = extra if "--recorded-only" in extra else ["--recorded-only", *extra]
    with pytest.raises(SystemExit) as stopped:
        bench.main([str(run), *options])
    text = str(stopped.value.code)
    assert text.startswith("error: ") and message in text and "\n" not in text


def test_an_audit_of_other_libraries_is_refused(bench: ModuleType, tmp_path: Path) -> None:
    run = _write_run(tmp_path / "run", probe=False)
    other = AuditRecord(
        agent="reasoner",
        skill="not-in-the-run",
        effect=0.1,
        low=0.05,
        high=0.2,
        questions=12,
        invocations=None,
        verdict="helps",
    )
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([other.model_dump(mode="json")]))
    with pytest.raises(bench.SignError, match="not in the replayed libraries"):
        bench.load_recorded(run, effects=listed)
