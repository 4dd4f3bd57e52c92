"""One module per paper table: the runs it needs (`plan`) and what its result tables hold,
from their outcomes (`tabulate`). `registry.TABLES` defines each table with them."""
