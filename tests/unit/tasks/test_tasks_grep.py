"""The conversation grep tool: matching, rendering, caps, call budget, bad patterns."""

from __future__ import annotations

import time

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from grse_graph.tasks import Conversation, Session, Turn, make_grep_tool, render_turn
from grse_graph.tasks.grep_tool import MAX_QUERY_CHARS, ConversationIndex


def conversation(turns_per_session: int = 2) -> Conversation:
    first = Session(
        number=1,
        date_time="1:00 pm on 2 May, 2023",
        turns=(
            Turn(dia_id="D1:1", speaker="Rosa", text="I adopted a cat called Noodle."),
            Turn(
                dia_id="D1:2",
                speaker="Milo",
                text="Look at my garden.",
                caption="a photo of tomato plants",
            ),
        ),
    )
    tea = Session(
        number=2,
        date_time="9:30 am on 20 June, 2023",
        turns=tuple(
            Turn(dia_id=f"D2:{i}", speaker="Milo", text=f"Cup of TEA number {i}.")
            for i in range(1, 26)
        ),
    )
    return Conversation(
        conversation_id="c1", speaker_a="Rosa", speaker_b="Milo", sessions=(first, tea)
    )


def test_turn_rendering_with_and_without_caption() -> None:
    plain = Turn(dia_id="D3:7", speaker="Ann", text='She said "hi"\nthen left.')
    assert render_turn(plain, "2 May, 2023") == (
        '[D3:7] (2 May, 2023) Ann said, "She said "hi" then left."'
    )
    shared = Turn(dia_id="D1:2", speaker="Milo", text="Look.", caption="a photo of a dog")
    assert render_turn(shared, "d") == '[D1:2] (d) Milo said, "Look." and shared a photo of a dog'


def test_match_is_case_insensitive_and_shows_full_lines() -> None:
    tool = make_grep_tool(conversation())
    out = tool.invoke({"query": "NOODLE"})
    assert out == (
        "Turns matching 'NOODLE' (1 match):\n"
        '[D1:1] (1:00 pm on 2 May, 2023) Rosa said, "I adopted a cat called Noodle."\n'
        "[2 grep calls left]"
    )


def test_captions_are_searchable() -> None:
    out = make_grep_tool(conversation()).invoke({"query": "tomato"})
    assert "[D1:2]" in out
    assert "and shared a photo of tomato plants" in out


def test_regex_alternatives() -> None:
    out = make_grep_tool(conversation()).invoke({"query": "noodle|garden"})
    assert "(2 matches)" in out
    assert "[D1:1]" in out and "[D1:2]" in out


def test_results_are_cut_at_twenty_and_say_so() -> None:
    out = make_grep_tool(conversation()).invoke({"query": "tea"})
    lines = [line for line in out.splitlines() if line.startswith("[D")]
    assert len(lines) == 20
    assert lines[0].startswith("[D2:1] ") and lines[-1].startswith("[D2:20] ")
    assert "showing 20 of 25 matches" in out
    assert "cut" in out


def test_custom_result_cap() -> None:
    out = make_grep_tool(conversation(), max_results=3).invoke({"query": "tea"})
    assert "showing 3 of 25 matches" in out


def test_three_calls_then_limit_message() -> None:
    tool = make_grep_tool(conversation())
    outs = [tool.invoke({"query": "noodle"}) for _ in range(4)]
    assert all("[D1:1]" in o for o in outs[:3])
    assert outs[2].endswith("[0 grep calls left]")
    assert "[D1:1]" not in outs[3]
    assert outs[3].startswith("Search limit reached: all 3 grep calls")


def test_each_tool_has_its_own_budget() -> None:
    convo = conversation()
    index = ConversationIndex.of(convo)
    first = make_grep_tool(convo, index=index, max_calls=1)
    second = make_grep_tool(convo, index=index, max_calls=1)
    first.invoke({"query": "tea"})
    assert "limit reached" in first.invoke({"query": "tea"})
    assert "limit reached" not in second.invoke({"query": "tea"})


@pytest.mark.parametrize("query", ["[unclosed", "(", "cat (", "*noodle"])
def test_bad_regex_is_searched_as_text(query: str) -> None:
    out = make_grep_tool(conversation()).invoke({"query": query})
    assert "not a valid regular expression" in out
    assert "searched as plain text" in out


def test_bad_regex_literal_hit() -> None:
    out = make_grep_tool(conversation()).invoke({"query": "called Noodle.)"})
    assert "not a valid regular expression" in out
    assert "No turn matches" in out


def test_no_match_returns_no_turns() -> None:
    tool = make_grep_tool(conversation())
    out = tool.invoke({"query": "zebra"})
    assert out == "No turn matches 'zebra'.\n[2 grep calls left]"
    # Words that each occur but not as the phrase: no keyword fallback, nothing is returned.
    out = tool.invoke({"query": "what did Rosa adopt cat"})
    assert out.startswith("No turn matches")
    assert "[D" not in out


def test_only_what_was_said_is_searched_not_speaker_or_date() -> None:
    tool = make_grep_tool(conversation())
    # "Milo" speaks every tea turn and "June" is only in the session date.
    assert tool.invoke({"query": "Milo"}).startswith("No turn matches")
    assert tool.invoke({"query": "June|2023"}).startswith("No turn matches")
    assert "[D1:1]" in tool.invoke({"query": "adopted"})


def test_catastrophic_pattern_is_stopped_within_the_time_budget() -> None:
    long_turn = Turn(dia_id="D1:1", speaker="Rosa", text="a" * 40 + "!")
    convo = Conversation(
        conversation_id="c2",
        speaker_a="Rosa",
        speaker_b="Milo",
        sessions=(Session(number=1, date_time="d", turns=(long_turn,)),),
    )
    started = time.monotonic()
    out = make_grep_tool(convo, time_budget_s=0.2).invoke({"query": "(a|aa)+$"})
    assert time.monotonic() - started < 5
    assert "took too long" in out
    assert "[D1:1]" not in out


def test_empty_and_overlong_queries() -> None:
    tool = make_grep_tool(conversation())
    assert "empty" in tool.invoke({"query": "   "})
    assert "too long" in tool.invoke({"query": "a" * 500})


def test_tool_schema_and_description() -> None:
    tool = make_grep_tool(conversation())
    assert tool.name == "grep"
    assert set(tool.args) == {"query"}
    assert "Rosa and Milo" in tool.description
    assert "3 calls" in tool.description


def test_the_query_bound_is_advertised_to_grammar_engines_not_enforced_on_parse() -> None:
    tool = make_grep_tool(conversation())
    sent = convert_to_openai_tool(tool)["function"]["parameters"]
    assert sent["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    # An engine that ignores the schema still gets the tool's own one-line answer.
    assert "too long" in tool.invoke({"query": "a" * (MAX_QUERY_CHARS + 1)})
    assert "Invalid arguments" in tool.invoke({"pattern": "x"})
