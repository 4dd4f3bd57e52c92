"""Append-only JSONL files of pydantic records, flushed per record, readable after a crash (run
folders, probe folders)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel

from grse_graph.durable import append_jsonl, read_jsonl
from grse_graph.errors import GrseError

R = TypeVar("R", bound=BaseModel)


class RunFolderError(GrseError):
    """A run folder file is unreadable or holds a record that does not validate."""


class JsonlStore(Generic[R]):
    """One `model_dump_json()` per line, written and read by `grse_graph.durable`: `append`
    fsyncs before returning, and a torn last line a kill left is dropped on read and cut off by
    the next append, so every finished record survives and nothing half-written is ever read. An
    optional `key` function indexes records for `get`.
    """

    def __init__(self, path: Path, model: type[R], key: Callable[[R], str] | None = None) -> None:
        self.path = path
        self.model = model
        self._key = key
        self._index: dict[str, R] | None = None

    def __iter__(self) -> Iterator[R]:
        return iter(self.read())

    def read(self) -> list[R]:
        """Every finished record in file order (a torn last line is skipped)."""
        return read_jsonl(self.path, self.model, error=RunFolderError).records

    def append(self, record: R) -> None:
        """Write one record durably (cutting off a torn last line a kill may have left)."""
        append_jsonl(self.path, record.model_dump_json())
        if self._index is not None and self._key is not None:
            self._index[self._key(record)] = record

    def get(self, key: str) -> R | None:
        """The last record with this key, or None (needs a `key` function)."""
        if self._key is None:
            raise TypeError(f"{self.path.name} has no key function")
        if self._index is None:
            self._index = {self._key(r): r for r in self.read()}
        return self._index.get(key)
