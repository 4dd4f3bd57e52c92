"""Table 6 of the GRSE paper (transfer): `python evals/table6_transfer.py --help`."""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table6"))
