"""Tables 4 and 5 of the GRSE paper (repair of a planted library).

`python evals/table4_5_repair.py --help`
"""

import sys

from grse_graph.reproduce.script import main

if __name__ == "__main__":
    sys.exit(main("table4_5"))
