"""Table 1 of the GRSE paper (HotpotQA): `python evals/table1_hotpotqa.py --help`."""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table1"))
