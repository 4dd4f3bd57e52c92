"""SkillMAS (issue 14): Skill and Executor Utility tables, retained evidence with bounded
diagnosability, skill evolution through a validation pool, and a team that restructures itself
between rounds. See docs/SKILLMAS.md."""

from grse_graph.methods.skillmas.method import SkillmasMethod
from grse_graph.methods.skillmas.settings import SkillmasSettings
from grse_graph.methods.skillmas.state import SkillmasState
from grse_graph.methods.skillmas.trace import SkillmasRecord

__all__ = ["SkillmasMethod", "SkillmasRecord", "SkillmasSettings", "SkillmasState"]
