"""GRSE credit: group advantages, the group-relative critic with attribution checks, and the
aggregation of credits into edit directions and induction patterns (GUIDE §3).

The plan contract, the operators and the gate live in `grse_graph.methods`, because every
method shares them.
"""

from grse_graph.methods.grse.aggregate import aggregate

__all__ = ["aggregate"]
