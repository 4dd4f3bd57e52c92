"""Table 11 of the GRSE paper (training cost): `python evals/table11_cost.py --help`."""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table11"))
