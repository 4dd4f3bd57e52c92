"""Table 9 of the GRSE paper (skill typing): `python evals/table9_typing.py --help`."""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table9"))
