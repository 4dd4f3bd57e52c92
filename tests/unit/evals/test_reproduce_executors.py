"""The executors of a baseline and of skill typing against the fake OpenAI-compatible server
(the eval and train executors run in the T4 + T5 fake-server test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from grse_graph.llm import load_config
from grse_graph.reproduce.executors import (
    EVAL_DIR,
    RunContext,
    execute_baseline,
    execute_typing,
    run_llm,
)
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.typing_labels import UNPARSED, parse_label
from grse_graph.skills import Skill, SkillLibrary
from tests.fakeserver import FakeOpenAIServer

LABELS = ["answer format", "evidence retrieval"]


def _context(server: FakeOpenAIServer) -> RunContext:
    llm = load_config(env=server.env(timeout_s=5.0, max_retries=0))
    return RunContext(llm=llm, data={"demo": None}, console=Console(quiet=True))


def test_a_baseline_run_answers_the_limit_and_counts_its_calls(tmp_path: Path) -> None:
    spec = RunSpec(
        kind="baseline",
        task="demo",
        method="cot",
        actor="fake",
        commit="c",
        params={"split": "test", "limit": 2},
    )
    with FakeOpenAIServer() as server:
        outcome = execute_baseline(spec, tmp_path, _context(server), {})
        calls = server.counts()["actor"]
    assert outcome.summary is not None and outcome.summary.questions == 2
    assert outcome.usage["roles"]["actor"]["calls"] == calls == 2
    assert (tmp_path / EVAL_DIR / "predictions.jsonl").exists()


def test_a_baseline_run_takes_its_settings_from_the_spec(tmp_path: Path) -> None:
    spec = RunSpec(
        kind="baseline",
        task="demo",
        method="cot-sc",
        actor="fake",
        commit="c",
        params={"split": "test", "limit": 1, "settings": {"samples": 2, "temperature": 0.5}},
    )
    with FakeOpenAIServer() as server:
        outcome = execute_baseline(spec, tmp_path, _context(server), {})
        calls = server.counts()["actor"]
    assert outcome.summary is not None and calls == 2  # two samples, not the default five


def test_a_run_is_made_with_the_caps_its_spec_names() -> None:
    llm = load_config(env={})
    models = {
        "actor": {"model": "m", "max_tokens": 4096},
        "critic": {"model": "m", "max_tokens": 3000},
    }
    spec = RunSpec(
        kind="eval", task="demo", method="empty", actor="a", commit="c", params={"models": models}
    )
    made = run_llm(spec, llm)
    assert (made.actor.max_tokens, made.critic.max_tokens) == (4096, 3000)
    assert made.optimizer == llm.optimizer  # not named: the role's own
    bare = RunSpec(kind="eval", task="demo", method="empty", actor="a", commit="c")
    assert run_llm(bare, llm) == llm


def test_an_unknown_baseline_is_refused(tmp_path: Path) -> None:
    spec = RunSpec(kind="baseline", task="demo", method="nope", actor="fake", commit="c")
    with FakeOpenAIServer() as server, pytest.raises(Exception, match="unknown baseline"):
        execute_baseline(spec, tmp_path, _context(server), {})


def test_typing_labels_every_skill_of_the_trained_libraries(tmp_path: Path) -> None:
    skill = Skill.build(
        "reasoner",
        name="short-answer",
        description="Use when writing the final answer.",
        body="Answer with the entity only.",
    )
    folder = tmp_path / "lib"
    SkillLibrary.empty("reasoner").add(skill).save(folder)
    trained = RunOutcome(
        run_id="t1", kind="train", wall_s=1.0, final_libraries={"reasoner": str(folder)}
    )
    spec = RunSpec(
        kind="typing",
        task="hotpotqa",
        method="typing",
        actor="fake",
        commit="c",
        params={"libraries_from": "t1", "labels": LABELS},
        needs=("t1",),
    )
    with FakeOpenAIServer() as server:
        outcome = execute_typing(spec, tmp_path / "run", _context(server), {"t1": trained})
        assert server.counts()["critic"] == 1
    (typed,) = outcome.skill_types
    # Table 9 counts the words of the description (6) and of the body (5).
    assert (typed.agent, typed.skill, typed.words) == ("reasoner", "short-answer", 11)
    assert typed.label in [*LABELS, UNPARSED]


def test_a_label_is_read_from_the_reply_or_counted_unparsed() -> None:
    assert parse_label("Type: Evidence retrieval.", LABELS) == "evidence retrieval"
    assert parse_label("answer format, not evidence retrieval", LABELS) == "answer format"
    assert parse_label("a procedure", LABELS) == UNPARSED
