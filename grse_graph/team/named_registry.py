"""An immutable name -> entry mapping shared by the team's pluggable parts (topologies, tool
protocols): entries are checked against their protocol once, names are unique, and an unknown
name is one `ConfigError` listing the known ones."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import ClassVar, Generic, Protocol, TypeVar

from grse_graph.errors import ConfigError


class Named(Protocol):
    @property
    def name(self) -> str: ...


EntryT = TypeVar("EntryT", bound=Named)


class NamedRegistry(Mapping[str, EntryT], Generic[EntryT]):
    """Subclasses set `kind` (named in errors), `entry_type` (a runtime-checkable protocol)
    and `needs` (what an entry must have, for the error about one that is not)."""

    kind: ClassVar[str]
    entry_type: ClassVar[type]
    needs: ClassVar[str]

    def __init__(self, entries: Iterable[EntryT] = ()) -> None:
        checked: dict[str, EntryT] = {}
        for entry in entries:
            if not isinstance(entry, self.entry_type):
                raise ConfigError(f"{type(entry).__name__} is not a {self.kind} ({self.needs})")
            if entry.name in checked:
                raise ConfigError(f"{self.kind} {entry.name!r} is registered twice")
            checked[entry.name] = entry
        self._entries = checked

    def __getitem__(self, name: str) -> EntryT:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._entries)})"

    def _extended(self, entry: EntryT) -> list[EntryT]:
        return [*self._entries.values(), entry]

    def resolve(self, name: str) -> EntryT:
        """The entry registered under `name` (a `ConfigError` naming the known ones)."""
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries))
            raise ConfigError(f"unknown {self.kind} {name!r} (known: {known})") from None
