"""The tables `grse reproduce` and the `evals/` scripts know, by name."""

from __future__ import annotations

from .tables.base import TableDef
from .tables.t1_hotpotqa import TABLE1
from .tables.t2_locomo import TABLE2
from .tables.t3_transitions import TABLE3
from .tables.t6_transfer import TABLE6
from .tables.t9_typing import TABLE9
from .tables.t10_ablations import TABLE10
from .tables.t11_cost import TABLE11
from .tables.t45_repair import TABLE45

TABLES: dict[str, TableDef] = {
    table.name: table
    for table in (TABLE1, TABLE2, TABLE3, TABLE45, TABLE6, TABLE9, TABLE10, TABLE11)
}
