"""Models of numeric counts that add up field by field."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Self

from pydantic import BaseModel


class Counts(BaseModel):
    """Numeric fields only: `+` and `-` work field by field, so a field added later is never
    left out of a sum."""

    def _fieldwise(self, other: Self, op: Callable[[Any, Any], Any]) -> Self:
        return type(self)(
            **{
                name: op(getattr(self, name), getattr(other, name))
                for name in type(self).model_fields
            }
        )

    def __add__(self, other: Self) -> Self:
        return self._fieldwise(other, operator.add)

    def __sub__(self, other: Self) -> Self:
        return self._fieldwise(other, operator.sub)
