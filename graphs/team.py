"""The agent team for `langgraph dev` / LangGraph Studio (see `grse_graph.studio`).

Configure each assistant through its context (task, data, pack or libraries, skill mode, the
actor's endpoint); send a question of the task as a user message (or its `question_id`).
Importing this module reads nothing and contacts no server.
"""

from grse_graph.studio import build_team_studio_graph

graph = build_team_studio_graph()
