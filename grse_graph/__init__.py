"""grse-graph: Group-Relative Skill Evolution for LangGraph agent teams."""

__version__ = "0.1.0"
