"""The tables `grse reproduce` and the `evals/` scripts know, by name."""

from __future__ import annotations

from .tables.base import TableDef
from .tables.t1_hotpotqa import TABLE1
from .tables.t45_repair import TABLE45

TABLES: dict[str, TableDef] = {table.name: table for table in (TABLE1, TABLE45)}
