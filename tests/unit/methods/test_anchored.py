"""Deterministic anchored edits."""

from __future__ import annotations

from grse_graph.methods.operators.anchored import apply_anchored_edits
from grse_graph.methods.operators.schema import AnchoredEdit

BODY = "# Steps\n1. Read the question.\n2. Find the passage.\n3. Answer briefly."


def edit(op: str, anchor: str, text: str = "") -> AnchoredEdit:
    return AnchoredEdit(op=op, anchor=anchor, text=text)  # type: ignore[arg-type]


def test_replace() -> None:
    body, applied, skipped = apply_anchored_edits(
        BODY, [edit("replace", "Answer briefly.", "Answer in 5 words.")]
    )
    assert body == "# Steps\n1. Read the question.\n2. Find the passage.\n3. Answer in 5 words."
    assert len(applied) == 1 and skipped == []


def test_insert_after_goes_on_a_new_line_after_the_anchor_line() -> None:
    body, _, _ = apply_anchored_edits(BODY, [edit("insert_after", "Find the", "   Quote it.")])
    assert body.splitlines()[3] == "   Quote it."
    assert body.splitlines()[2] == "2. Find the passage."


def test_insert_after_last_line() -> None:
    body, _, _ = apply_anchored_edits(BODY, [edit("insert_after", "Answer briefly.", "4. Check.")])
    assert body.endswith("3. Answer briefly.\n4. Check.")


def test_insert_before() -> None:
    body, _, _ = apply_anchored_edits(
        BODY, [edit("insert_before", "2. Find", "1b. Note entities.")]
    )
    assert body.splitlines()[2:4] == ["1b. Note entities.", "2. Find the passage."]


def test_delete_whole_line_leaves_no_blank_line() -> None:
    body, _, _ = apply_anchored_edits(BODY, [edit("delete", "2. Find the passage.")])
    assert body == "# Steps\n1. Read the question.\n3. Answer briefly."


def test_delete_last_line_and_part_of_line() -> None:
    body, _, _ = apply_anchored_edits(BODY, [edit("delete", "3. Answer briefly.")])
    assert body == "# Steps\n1. Read the question.\n2. Find the passage."
    body, _, _ = apply_anchored_edits(BODY, [edit("delete", " briefly")])
    assert body.endswith("3. Answer.")


def test_missing_and_ambiguous_anchors_are_skipped_and_counted() -> None:
    edits = [
        edit("replace", "not in the body", "x"),
        edit("replace", ". ", "x"),  # occurs on every numbered line
        edit("delete", "   "),
        edit("replace", "Read the question.", "Read the question twice."),
    ]
    body, applied, skipped = apply_anchored_edits(BODY, edits)
    assert [s.reason for s in skipped] == [
        "anchor not found",
        "ambiguous anchor: found 3 times",
        "empty anchor",
    ]
    assert applied == [edits[3]]
    assert "Read the question twice." in body


def test_whitespace_tolerant_match_when_unique() -> None:
    body, applied, _ = apply_anchored_edits(
        BODY, [edit("replace", "1.  Read\nthe question.", "1. Go.")]
    )
    assert applied and body.splitlines()[1] == "1. Go."


def test_edits_apply_in_order_to_the_running_body() -> None:
    edits = [
        edit("replace", "Answer briefly.", "Answer now."),
        edit("replace", "Answer now.", "Stop."),
    ]
    body, applied, skipped = apply_anchored_edits(BODY, edits)
    assert body.endswith("3. Stop.") and len(applied) == 2 and not skipped


def test_insert_with_empty_text_is_skipped() -> None:
    body, applied, skipped = apply_anchored_edits(BODY, [edit("insert_after", "Answer", "  ")])
    assert body == BODY and not applied and skipped[0].reason == "insert_after with empty text"
