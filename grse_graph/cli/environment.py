"""Report `GRSE_*` environment variables that no part of grse reads (a typo is otherwise silent)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from pydantic import BaseModel

from grse_graph.llm.config import EngineSettings, LLMConfig, RoleSettings
from grse_graph.llm.provider import ROLES

PREFIX = "GRSE_"
OTHER_VARIABLES: tuple[str, ...] = (
    "GRSE_CACHE_DIR",  # the model cache (`default_cache_dir`)
    "GRSE_HOTPOTQA",  # evals/ and grse reproduce: the HotpotQA dev file (--data-hotpotqa)
    "GRSE_LOCOMO",  # evals/ and grse reproduce: locomo10.json (--data-locomo)
    "GRSE_POSTGRES_DSN",  # the test suite's PostgreSQL server (`.ci/run` starts one)
)


def known_variables() -> list[str]:
    """Every `GRSE_*` name grse reads: `GRSE_<ROLE|ENGINE>_<FIELD>` plus the others above."""
    sections: dict[str, type[BaseModel]] = {
        **{role: RoleSettings for role in ROLES},
        "engine": EngineSettings,
    }
    names = [
        f"{PREFIX}{section.upper()}_{field.upper()}"
        for section, schema in sections.items()
        for field in schema.model_fields
    ]
    return [*names, *OTHER_VARIABLES]


def unknown_variable_warnings(env: Mapping[str, str], config: LLMConfig | None = None) -> list[str]:
    """One warning line per `GRSE_*` variable in `env` that grse does not read, naming the
    closest known one. Variables a role names as its `api_key_env` are not settings and are
    left alone."""
    names = set(known_variables())
    if config is not None:
        names |= {config.role(r).api_key_env or "" for r in ROLES}
    warnings = []
    for variable in sorted(v for v in env if v.startswith(PREFIX) and v not in names):
        close = difflib.get_close_matches(variable, sorted(names), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        warnings.append(f"warning: {variable} is not a grse setting and is ignored{hint}")
    return warnings
