"""Append-only JSONL files of pydantic records, flushed per record, readable after a crash (run
folders, probe folders)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from grse_graph.errors import GrseError

R = TypeVar("R", bound=BaseModel)


class RunFolderError(GrseError):
    """A run folder file is unreadable or holds a record that does not validate."""


class JsonlStore(Generic[R]):
    """One `model_dump_json()` per line; `append` flushes and fsyncs before returning.

    A crash can leave at most one partial final line (a record that never finished); reading
    ignores it and the next append truncates it, so every finished record survives and nothing
    half-written is ever read. An optional `key` function indexes records for `get`.
    """

    def __init__(self, path: Path, model: type[R], key: Callable[[R], str] | None = None) -> None:
        self.path = path
        self.model = model
        self._key = key
        self._index: dict[str, R] | None = None

    def __iter__(self) -> Iterator[R]:
        return iter(self.read())

    def read(self) -> list[R]:
        """Every finished record in file order (a partial last line is skipped)."""
        if not self.path.exists():
            return []
        # Split the bytes, not decoded text: a crash may cut the last line inside a character.
        lines = self.path.read_bytes().split(b"\n")
        # The last element is "" when the file ends with a newline, else an unfinished record.
        records: list[R] = []
        for number, line in enumerate(lines[:-1], start=1):
            if not line.strip():
                continue
            try:
                records.append(self.model.model_validate_json(line))
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "record"
                raise RunFolderError(f"{self.path}:{number}: {where}: {first['msg']}") from None
        return records

    def append(self, record: R) -> None:
        """Write one record durably (truncating a partial line a crash may have left)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_partial_line()
        line = record.model_dump_json() + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        if self._index is not None and self._key is not None:
            self._index[self._key(record)] = record

    def get(self, key: str) -> R | None:
        """The last record with this key, or None (needs a `key` function)."""
        if self._key is None:
            raise TypeError(f"{self.path.name} has no key function")
        if self._index is None:
            self._index = {self._key(r): r for r in self.read()}
        return self._index.get(key)

    def _drop_partial_line(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb+") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) == b"\n":
                return
            handle.seek(0)
            data = handle.read()
            handle.truncate(data.rfind(b"\n") + 1)
