"""Table 3 of the GRSE paper (answer transitions): `python evals/table3_transitions.py --help`."""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table3"))
