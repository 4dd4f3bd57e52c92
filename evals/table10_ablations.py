"""Table 10 of the GRSE paper (ablations): `python evals/table10_ablations.py --help`."""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table10"))
