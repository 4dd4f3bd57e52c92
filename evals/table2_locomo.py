"""Table 2 of the GRSE paper (LoCoMo per category): `python evals/table2_locomo.py --help`."""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table2"))
