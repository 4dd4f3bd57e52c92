"""`with` for a server the code starts: leaving stops it, whatever happened inside (a server left
running would hold its port and the CPU after the command)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class Closing(ABC):
    """A resource `with` closes on exit, whatever happened inside."""

    @abstractmethod
    def close(self) -> None:
        """Release the resource."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class Started(Closing):
    """A resource `with` starts on entry and stops on exit."""

    @abstractmethod
    def start(self) -> Self:
        """Start the resource and return it."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the resource. Safe to call twice."""

    def __enter__(self) -> Self:
        return self.start()

    def close(self) -> None:
        self.stop()
