"""The output contrast of a diagnosis: the ends of the agent's outputs in a failed and a
successful run of its group."""

from __future__ import annotations

from grse_graph.methods.grse.contrast import output_contrast, output_end
from grse_graph.team.rollout import ToolCallRecord
from tests.unit.methods.grse_methods_builders import diagnosis, two_agent_rollout


def test_output_end_keeps_the_hand_off_at_the_end_on_one_line() -> None:
    assert output_end("  short\n output ") == "short output"
    long = "word " * 100 + "Candidate answer: Paris"
    end = output_end(long, chars=40)
    assert end.startswith("... ") and end.endswith("Candidate answer: Paris")
    assert len(end) <= 44 and " wor " not in f" {end} "  # cut at a word start


def test_the_cited_failed_and_successful_steps_are_contrasted() -> None:
    group = [two_agent_rollout(0, 1.0), two_agent_rollout(1, 0.0), two_agent_rollout(2, 1.0)]
    contrast = output_contrast(diagnosis(successful_refs=["r3.s1"]), group)
    assert contrast is not None
    assert contrast.failed == "The passages say Paris (attempt 1)."
    assert contrast.successful == "The passages say Paris (attempt 2)."
    assert contrast.failed_calls == ['grep(q="capital") -> "Paris"']
    assert contrast.text() == (
        'Its tool calls in a failed run: grep(q="capital") -> "Paris". '
        'Its output in a failed run ended: "The passages say Paris (attempt 1)."; '
        'in a successful run: "The passages say Paris (attempt 2)."'
    )


def test_without_a_cited_success_the_groups_first_successful_run_is_used() -> None:
    group = [two_agent_rollout(0, 0.0), two_agent_rollout(1, 0.0), two_agent_rollout(2, 1.0)]
    contrast = output_contrast(diagnosis(failed_refs=["r1.s1"], successful_refs=[]), group)
    assert contrast is not None and contrast.successful.endswith("(attempt 2).")
    all_failed = [two_agent_rollout(0, 0.0), two_agent_rollout(1, 0.0)]
    only_failed = output_contrast(diagnosis(failed_refs=["r1.s1"], successful_refs=[]), all_failed)
    assert only_failed is not None and only_failed.successful == ""
    assert only_failed.text().endswith(
        'Its output in a failed run ended: "The passages say Paris (attempt 0)."'
    )


def test_no_contrast_without_a_cited_failed_step_of_the_agent() -> None:
    group = [two_agent_rollout(0, 1.0), two_agent_rollout(1, 0.0)]
    # r2.s2 is the answerer's step, r9.s1 does not exist.
    assert output_contrast(diagnosis(failed_refs=["r2.s2", "r9.s1"]), group) is None


def test_a_sentence_long_query_that_matched_nothing_is_shown_from_its_start() -> None:
    # The demo's 0.5B retriever: a whole invented sentence as the grep query.
    failing = two_agent_rollout(1, 0.0)
    query = "Nadia's father enjoys The Salt Road, but Piet does not seem to care " * 3
    failing.steps[0].tool_calls = [
        ToolCallRecord(name="grep", arguments={"query": query}, result="No turn matches '...'."),
        ToolCallRecord(name="grep", arguments={"query": "x"}, error="tool call limit reached"),
    ]
    contrast = output_contrast(diagnosis(), [two_agent_rollout(0, 1.0), failing])
    assert contrast is not None
    searched, refused = contrast.failed_calls
    assert searched.startswith("grep(query=\"Nadia's father enjoys The Salt Road, but")
    assert " ...) -> \"No turn matches '...'.\"" in searched and len(searched) < 170
    assert refused == 'grep(query="x") -> "tool call limit reached"'
