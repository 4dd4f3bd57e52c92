"""Parsing tool calls written as tags (the ``text`` tool protocol's syntax)."""

from __future__ import annotations

import pytest

from grse_graph.team.tag_calls import MalformedTag, TagCall, call_tag, parse_tag_calls

TOOLS = ("grep",)


def test_a_well_formed_call_is_the_tool_and_its_stripped_argument() -> None:
    (call,) = parse_tag_calls("I will search.\n<grep> adopt|adoption </grep>\n", TOOLS)
    assert call == TagCall(tool="grep", argument="adopt|adoption", written=call.written)
    assert call.written == "<grep> adopt|adoption </grep>"


def test_several_calls_in_one_reply_come_in_the_order_written() -> None:
    text = "<grep>cat</grep> then <grep>vase|broke</grep>\n<grep>cello</grep>"
    items = parse_tag_calls(text, TOOLS)
    assert [(i.tool, i.argument) for i in items if isinstance(i, TagCall)] == [
        ("grep", "cat"),
        ("grep", "vase|broke"),
        ("grep", "cello"),
    ]


def test_text_without_a_tag_holds_no_call() -> None:
    assert parse_tag_calls('Evidence:\n- [D1:1] Rosa said, "I adopted Noodle."', TOOLS) == []


def test_tags_of_tools_not_offered_and_other_markup_are_text() -> None:
    assert parse_tag_calls("<search>cat</search> <b>bold</b> a < b > c", TOOLS) == []
    assert parse_tag_calls("<GREP>cat</GREP> < grep>cat</grep >", TOOLS) == []


def test_an_argument_may_span_lines_and_keep_its_inner_spacing() -> None:
    (call,) = parse_tag_calls("<grep>\nred  bike\n</grep>", TOOLS)
    assert isinstance(call, TagCall) and call.argument == "red  bike"


@pytest.mark.parametrize(
    ("text", "problem", "written"),
    [
        ("Let me look: <grep>adopt", "unclosed", "<grep>adopt"),
        ("<grep>   </grep>", "empty", "<grep>   </grep>"),
        ("<grep></grep>", "empty", "<grep></grep>"),
        ("<grep>cat <grep>dog</grep></grep>", "nested", "<grep>cat <grep>dog</grep></grep>"),
        ("cat</grep>", "unopened", "</grep>"),
    ],
)
def test_malformed_tags_are_reported_with_their_problem(
    text: str, problem: str, written: str
) -> None:
    assert parse_tag_calls(text, TOOLS) == [
        MalformedTag(tool="grep", problem=problem, written=written)  # type: ignore[arg-type]
    ]


def test_a_malformed_tag_does_not_hide_the_well_formed_calls_around_it() -> None:
    text = "<grep>cat</grep> <grep></grep> </grep> <grep>vase</grep> <grep>cello"
    items = parse_tag_calls(text, TOOLS)
    assert [type(i).__name__ for i in items] == [
        "TagCall",
        "MalformedTag",
        "MalformedTag",
        "TagCall",
        "MalformedTag",
    ]
    assert [i.problem for i in items if isinstance(i, MalformedTag)] == [
        "empty",
        "unopened",
        "unclosed",
    ]


def test_a_tag_of_another_tool_inside_a_call_is_nested() -> None:
    (item,) = parse_tag_calls("<grep>a <load_skill>x</load_skill></grep>", ("grep", "load_skill"))
    assert isinstance(item, MalformedTag) and item.problem == "nested" and item.tool == "grep"


def test_calls_of_several_tools_are_told_apart() -> None:
    items = parse_tag_calls(
        "<load_skill>dates</load_skill><grep>cat</grep>", ("grep", "load_skill")
    )
    assert [(i.tool, i.argument) for i in items if isinstance(i, TagCall)] == [
        ("load_skill", "dates"),
        ("grep", "cat"),
    ]


def test_a_long_unclosed_tag_is_cut_in_its_record() -> None:
    (item,) = parse_tag_calls("<grep>" + "x" * 1000, TOOLS)
    assert isinstance(item, MalformedTag) and item.problem == "unclosed"
    assert len(item.written) < 400 and item.written.endswith("...")


def test_call_tag_writes_what_the_parser_reads() -> None:
    (call,) = parse_tag_calls(call_tag("grep", "a|b"), TOOLS)
    assert isinstance(call, TagCall) and call.argument == "a|b"


def test_no_offered_tool_means_no_call() -> None:
    assert parse_tag_calls("<grep>cat</grep>", ()) == []
