"""MASkills (spec maskills.md): per-trajectory, exposure-based skill credit with a moving-average
utility, as a credit method on the shared training loop. See docs/MASKILLS.md."""

from grse_graph.methods.maskills.method import MaskillsMethod
from grse_graph.methods.maskills.record import MaskillsRecord
from grse_graph.methods.maskills.settings import MaskillsSettings

__all__ = ["MaskillsMethod", "MaskillsRecord", "MaskillsSettings"]
