"""Run-folder files stay readable whatever a SIGKILL cut: a record line cut inside a multi-byte
character, or a finished line that is garbage, never turns into a traceback on resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from grse_graph.jsonl import JsonlStore, RunFolderError

pytestmark = pytest.mark.faults


class Record(BaseModel):
    unit_id: str
    text: str


def _store(tmp_path: Path) -> JsonlStore[Record]:
    return JsonlStore(tmp_path / "records.jsonl", Record, key=lambda r: r.unit_id)


def test_a_line_cut_inside_a_character_is_an_unfinished_record(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(Record(unit_id="a", text="Zürich café"))
    line = Record(unit_id="b", text="Zürich café").model_dump_json().encode()
    cut = line.index("é".encode()) + 1  # the first byte of a two-byte character
    store.path.write_bytes(store.path.read_bytes() + line[:cut])

    assert [r.unit_id for r in _store(tmp_path).read()] == ["a"]
    store.append(Record(unit_id="b", text="again"))
    assert [(r.unit_id, r.text) for r in _store(tmp_path).read()] == [
        ("a", "Zürich café"),
        ("b", "again"),
    ]


def test_invalid_bytes_in_a_finished_line_name_the_file_and_line(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.append(Record(unit_id="a", text="ok"))
    store.path.write_bytes(store.path.read_bytes() + b'{"unit_id": "b", "text": "\xc3"}\n')
    with pytest.raises(RunFolderError, match=r"records\.jsonl:2: "):
        _store(tmp_path).read()
