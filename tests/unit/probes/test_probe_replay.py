"""Output reuse for unchanged agents (`reusable_step`, `run_rollout(replay=...)`) and what the
prober makes of it: fewer model calls, its step counts, and resuming from its folder (a fake
model that counts calls and answers from the skills in its system prompt; no engine)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from grse_graph.errors import ModelRequestRefused
from grse_graph.evaluation.answerer import TeamAnswerer
from grse_graph.llm.provider import SamplingSettings
from grse_graph.probes import ProbeResult, ProbeRun, ProbeSettings, ProbeStore, SkillProber
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.team import AgentSpec, TeamSpec, default_team, run_rollout
from grse_graph.team.agent import AgentTurnInput
from grse_graph.team.graph import reusable_step
from grse_graph.team.rollout import Rollout, Step, ToolCallRecord
from tests.fakes import FakeProvider, tool_call_message
from tests.unit.probes.test_audit_report import MarkerModel, MarkerTask, marker_library

GREEDY = SamplingSettings.greedy()


class CountingModel(MarkerModel):
    """`MarkerModel` (says `good` / `bad` when `token-good` / `token-bad` is in its system
    prompt) that records the system prompt of every call."""

    prompts: list[str] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(str(messages[0].content))
        return super()._generate(messages, *args, **kwargs)


class RefusingModel(CountingModel):
    """Refuses every turn whose system prompt has `token-bad` but not `token-good`."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        system = str(messages[0].content)
        if "token-bad" in system and "token-good" not in system:
            raise ModelRequestRefused("prompt refused")
        return super()._generate(messages, *args, **kwargs)


def skill(name: str, body: str) -> Skill:
    return Skill.build(name=name, description=f"Use for {name}.", body=body)


FIRST_SKILLS = (skill("first-good", "token-good"), skill("first-note", "Be brief."))
SECOND_SKILLS = (skill("second-bad", "token-bad"), skill("second-note", "Be careful."))


def two_agents(drop: Sequence[str] = ()) -> TeamSpec:
    """First agent: says `good` (first-good); second: says `bad` (second-bad), in sequence."""

    def agent(name: str, skills: Sequence[Skill]) -> AgentSpec:
        kept = [s for s in skills if s.name not in drop]
        return AgentSpec(name=name, role=f"You are {name}.", library=SkillLibrary.build(name, kept))

    return TeamSpec(agents=(agent("first", FIRST_SKILLS), agent("second", SECOND_SKILLS)))


TASK = MarkerTask(2)
QUESTION = TASK.split("validation")[0]


def execute(
    team: TeamSpec,
    model: CountingModel,
    replay: Sequence[Step] = (),
    sampling: SamplingSettings = GREEDY,
) -> Rollout:
    provider = FakeProvider(models={"actor": model})
    return asyncio.run(
        run_rollout(
            team, TASK, QUESTION, provider, sampling=sampling, rollout_id="r", replay=replay
        )
    )


def full_rollout() -> Rollout:
    return execute(two_agents(), CountingModel())


def test_masking_a_skill_of_the_second_agent_replays_the_first() -> None:
    full = full_rollout()
    model = CountingModel()
    masked = execute(two_agents(drop=["second-bad"]), model, full.steps)
    assert len(model.prompts) == 1  # the second agent only
    first, second = masked.steps
    assert first.reused and first.output == full.steps[0].output == "Answer: good"
    assert first.usage == full.steps[0].usage
    assert not second.reused and "token-bad" not in model.prompts[0]
    assert (full.steps[1].output, second.output) == ("Answer: bad", "Answer: plain")
    assert [s.index for s in masked.steps] == [0, 1]


def test_masking_a_skill_that_changes_the_first_agent_reruns_both() -> None:
    full = full_rollout()
    model = CountingModel()
    masked = execute(two_agents(drop=["first-good"]), model, full.steps)
    assert len(model.prompts) == 2
    assert not any(s.reused for s in masked.steps)
    assert masked.steps[0].output == "Answer: plain" != full.steps[0].output


def test_an_unchanged_first_output_lets_the_second_agent_be_reused() -> None:
    full = full_rollout()
    model = CountingModel()
    masked = execute(two_agents(drop=["first-note"]), model, full.steps)
    assert len(model.prompts) == 1  # the first agent's prompt changed, its output did not
    first, second = masked.steps
    assert not first.reused and first.output == full.steps[0].output
    assert second.reused and second.output == full.steps[1].output
    assert masked.answer == full.answer and masked.reward == full.reward


def test_an_identical_team_reuses_every_step_under_greedy_decoding() -> None:
    full = full_rollout()
    model = CountingModel()
    again = execute(two_agents(), model, full.steps)
    assert model.prompts == [] and all(s.reused for s in again.steps)
    assert again.answer == full.answer


def test_replay_is_ignored_when_sampling_is_not_greedy() -> None:
    full = full_rollout()
    model = CountingModel()
    sampled = execute(two_agents(), model, full.steps, SamplingSettings(temperature=0.7, seed=1))
    assert len(model.prompts) == 2 and not any(s.reused for s in sampled.steps)


def recorded(**update: Any) -> Step:
    step = Step(index=0, agent="first", system_prompt="S", input="I", output="O")
    return step.model_copy(update=update)


def turn(**update: Any) -> AgentTurnInput:
    base = AgentTurnInput(index=0, agent="first", system_prompt="S", user_input="I")
    return base.model_copy(update=update)


def test_reusable_step_returns_a_reused_copy_of_an_identical_turn() -> None:
    step = recorded()
    reused = reusable_step([step], turn())
    assert reused is not None and reused.reused and reused.output == "O"
    assert not step.reused


def test_reusable_step_refuses_a_different_system_prompt() -> None:
    assert reusable_step([recorded()], turn(system_prompt="S plus a skill")) is None


def test_reusable_step_refuses_a_different_input() -> None:
    assert reusable_step([recorded()], turn(user_input="I with another hand-off")) is None


def test_reusable_step_refuses_another_agent_or_a_position_beyond_the_record() -> None:
    assert reusable_step([recorded()], turn(agent="second")) is None
    assert reusable_step([recorded()], turn(index=1)) is None
    assert reusable_step([], turn()) is None


def test_reusable_step_refuses_a_skill_load_from_another_library() -> None:
    load = ToolCallRecord(name="load_skill", arguments={"name": "style"}, result="# Skill")
    step = recorded(tool_calls=[load], skills_hash="old")
    assert reusable_step([step], turn(skills_hash="new")) is None
    assert (
        reusable_step([step.model_copy(update={"skills_hash": None})], turn(skills_hash="new"))
        is None
    )
    assert reusable_step([step], turn(skills_hash="old")) is not None


def test_reusable_step_ignores_the_library_of_a_step_that_loaded_nothing() -> None:
    search = ToolCallRecord(name="search", arguments={"query": "x"}, result="found")
    step = recorded(tool_calls=[search], skills_hash="old")
    assert reusable_step([step], turn(skills_hash="new")) is not None


def test_the_team_answerer_replays_an_earlier_rollout_of_the_question() -> None:
    full = full_rollout()
    model = CountingModel()
    provider = FakeProvider(models={"actor": model})
    team = two_agents(drop=["second-bad"])
    answerer = TeamAnswerer(team, TASK, provider, GREEDY, replay={QUESTION.id: full})
    rollout = asyncio.run(answerer.answer(QUESTION, rollout_id="e"))
    assert len(model.prompts) == 1 and rollout.steps[0].reused
    failed = full.model_copy(update={"error": "boom"})
    answerer = TeamAnswerer(team, TASK, provider, GREEDY, replay={QUESTION.id: failed})
    rollout = asyncio.run(answerer.answer(QUESTION, rollout_id="e2"))
    assert len(model.prompts) == 3 and not any(s.reused for s in rollout.steps)


# -- the prober ------------------------------------------------------------------------------

# Two questions; the retriever has no skills, the reasoner say-good, say-bad and say-nothing:
# leave-one-out, 2 x (3 + 1) = 8 runs.
PROBE_TASK = MarkerTask(2)
PROBE_TEAM = default_team(PROBE_TASK, {"reasoner": marker_library()})


def probe(
    model: CountingModel, folder: Path, seen: list[tuple[ProbeRun, bool]] | None = None
) -> ProbeResult:
    def on_run(run: ProbeRun, resumed: bool) -> None:
        if seen is not None:
            seen.append((run, resumed))

    prober = SkillProber(
        PROBE_TASK,
        PROBE_TEAM,
        FakeProvider(models={"actor": model}),
        ProbeSettings(budget=120),
        store=ProbeStore(folder),
        on_run=on_run,
    )
    return asyncio.run(prober.run(PROBE_TASK.split("validation")))


def test_masked_runs_reuse_the_retrievers_step_and_the_prober_counts_it(tmp_path: Path) -> None:
    model = CountingModel()
    result = probe(model, tmp_path)
    assert result.design == "leave_one_out" and result.runs == 8
    # Full runs: 2 x 2 turns; masked runs: the retriever reused, the reasoner called (6 each).
    assert result.model_steps == 10 and result.reused_steps == 6
    assert len(model.prompts) == 10
    assert result.runs_resumed == 0 and result.runs_failed == 0


def test_a_second_probe_with_the_same_store_makes_no_model_call(tmp_path: Path) -> None:
    first = probe(CountingModel(), tmp_path)
    model = CountingModel()
    seen: list[tuple[ProbeRun, bool]] = []
    again = probe(model, tmp_path, seen)
    assert model.prompts == []
    assert again.runs_resumed == again.runs == 8 and all(resumed for _, resumed in seen)
    assert len(seen) == 8
    assert again.effects == first.effects
    # The step counts cover every run of the probe, resumed ones included.
    assert (again.model_steps, again.reused_steps) == (first.model_steps, first.reused_steps)


def test_a_failed_stored_run_is_made_again(tmp_path: Path) -> None:
    # Without say-good the reasoner's prompt has only token-bad: those two runs fail.
    failed = probe(RefusingModel(), tmp_path)
    assert failed.runs_failed == 2
    say_good = failed.effect_of("reasoner", "say-good")
    assert say_good is not None and say_good.effect is None
    model = CountingModel()
    again = probe(model, tmp_path)
    assert again.runs_resumed == 6 and again.runs_failed == 0
    # Only the two reasoner turns are new: the retriever's comes from the stored full run.
    assert len(model.prompts) == 2 and all("token-bad" in p for p in model.prompts)
    say_good = again.effect_of("reasoner", "say-good")
    assert say_good is not None and say_good.effect == 0.5


class LoadingModel(CountingModel):
    """Tool mode: first loads the skill `style`, then says `good` / `bad` after whatever body
    the load returned (the body is never in the system prompt)."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(str(messages[0].content))
        loaded = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        if not loaded:
            call = tool_call_message("load_skill", {"name": "style"})
            return ChatResult(generations=[ChatGeneration(message=call)])
        word = "good" if "token-good" in loaded[-1] else "bad"
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=f"Answer: {word}"))]
        )


def tool_team(body: str) -> TeamSpec:
    style = Skill.build(name="style", description="Use for every answer.", body=body)
    agent = AgentSpec(
        name="solo",
        role="You are solo.",
        library=SkillLibrary.build("solo", [style]),
        skill_mode="tool",
        max_tool_calls=0,
    )
    return TeamSpec(agents=(agent,))


def test_a_changed_skill_body_in_tool_mode_is_not_replayed() -> None:
    # Same name and description, so the same system prompt (the skill index); only what the
    # `load_skill` tool returns differs.
    full = execute(tool_team("token-good"), LoadingModel())
    assert full.answer == "good" and full.steps[0].skills_invoked == ["style"]
    model = LoadingModel()
    refined = execute(tool_team("token-bad"), model, full.steps)
    assert refined.steps[0].system_prompt == full.steps[0].system_prompt
    assert not refined.steps[0].reused and len(model.prompts) == 2
    assert refined.answer == "bad"


def test_an_unchanged_tool_mode_library_is_replayed() -> None:
    full = execute(tool_team("token-good"), LoadingModel())
    model = LoadingModel()
    again = execute(tool_team("token-good"), model, full.steps)
    assert again.steps[0].reused and model.prompts == []
    assert again.steps[0].skills_invoked == ["style"] and again.answer == "good"
