"""`grse_graph.durable`: atomic whole-file replace and the one torn-last-line policy of JSONL."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from grse_graph.durable import append_jsonl, atomic_write, read_jsonl, read_jsonl_lines
from grse_graph.errors import ConfigError, GrseError


class Item(BaseModel):
    key: str
    value: int


def _line(key: str, value: int) -> str:
    return Item(key=key, value=value).model_dump_json()


class Killed(Exception):
    """Stands in for a kill in the middle of writing the temporary file."""


def _write_half_then_die(path: Path, data: bytes) -> None:
    path.write_bytes(data[: len(data) // 2])
    raise Killed


def test_atomic_write_replaces_the_content_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "config.json"
    atomic_write(target, b"old content\n")
    atomic_write(target, b"new content\n")
    assert target.read_bytes() == b"new content\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["config.json"]


def test_atomic_write_cut_mid_write_leaves_the_old_content_whole(tmp_path: Path) -> None:
    target = tmp_path / "config.json"
    atomic_write(target, b"old content\n")
    with pytest.raises(Killed):
        atomic_write(target, b"new content that never fully lands\n", writer=_write_half_then_die)
    assert target.read_bytes() == b"old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]


def test_append_and_read_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "new" / "items.jsonl"
    append_jsonl(path, _line("a", 1))
    append_jsonl(path, _line("b", 2))
    found = read_jsonl(path, Item)
    assert [item.key for item in found.records] == ["a", "b"]
    assert found.torn_line is None
    assert path.read_bytes().endswith(b"\n")


def test_a_missing_file_reads_as_empty(tmp_path: Path) -> None:
    assert read_jsonl(tmp_path / "absent.jsonl", Item).records == []


def test_an_append_rejects_a_line_with_a_newline_inside(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one line"):
        append_jsonl(tmp_path / "items.jsonl", '{"key": "a",\n"value": 1}')


def test_a_torn_last_line_is_dropped_on_read_and_cut_off_by_the_next_append(
    tmp_path: Path,
) -> None:
    path = tmp_path / "items.jsonl"
    append_jsonl(path, _line("a", 1))
    with path.open("ab") as handle:  # a kill in the middle of the next append
        handle.write(_line("b", 2).encode()[:9])
    before = path.read_bytes()

    found = read_jsonl(path, Item)
    assert [item.key for item in found.records] == ["a"]
    assert found.torn_line == 2
    assert path.read_bytes() == before  # reading never changes the file

    append_jsonl(path, _line("c", 3))
    assert path.read_text().splitlines() == [_line("a", 1), _line("c", 3)]
    assert read_jsonl(path, Item).torn_line is None


def test_a_line_cut_inside_a_character_is_torn(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    line = _line("café", 1).encode()
    path.write_bytes(line[: line.index("é".encode()) + 1])
    assert read_jsonl_lines(path).torn_line == 1
    assert read_jsonl(path, Item).records == []


def test_a_finished_last_record_without_its_newline_is_kept_and_ended(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(_line("a", 1) + "\n" + _line("b", 2))  # the newline was lost
    assert [item.key for item in read_jsonl(path, Item).records] == ["a", "b"]
    append_jsonl(path, _line("c", 3))
    assert [item.key for item in read_jsonl(path, Item).records] == ["a", "b", "c"]


def test_a_corrupt_middle_line_is_a_one_line_error_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(_line("a", 1) + '\n{"key": "b", "value": "x"}\n\n' + _line("c", 3) + "\n")
    with pytest.raises(GrseError) as caught:
        read_jsonl(path, Item)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: value: Input should be a valid integer")
    assert "\n" not in message


def test_an_unparsable_line_that_was_finished_is_corruption_not_a_torn_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(_line("a", 1) + "\n" + "garbage\n")
    with pytest.raises(ConfigError, match=r"items\.jsonl:2: Invalid JSON"):
        read_jsonl(path, Item, error=ConfigError)


def test_a_complete_last_line_that_does_not_validate_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(_line("a", 1) + '\n{"key": "b"}')
    with pytest.raises(GrseError, match=r"items\.jsonl:2: value: Field required"):
        read_jsonl(path, Item)
