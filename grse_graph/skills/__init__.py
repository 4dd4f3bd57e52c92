"""SKILL.md skill packages (Agent Skills spec), per-agent libraries, rendering, tools, packs.

- `Skill`: one package (front matter, body, resources, `grse-*` bookkeeping in metadata).
- `SkillLibrary`: one agent's skills, immutable, sorted, limited, saved atomically.
- `render_inline` / `render_index` + `make_skill_tool` / `SkillUseRecorder`: giving a library to
  an agent in the prompt or through a `load_skill` tool.
- `export_pack` / `import_pack` / `load_libraries`: shipping libraries of a whole team.
- `validate_path` / `inspect_path`: checking anything on disk, all problems at once.
- `shown`: any untrusted text made safe for a terminal, on one line.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .boundary import Boundary
from .files import FileWriter, durable_write, recover_leftovers
from .library import SkillLibrary
from .limits import (
    MAX_COMPATIBILITY_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    MAX_RESOURCE_BYTES,
    MAX_RESOURCE_DEPTH,
    MAX_SKILL_FILES,
    MAX_SKILL_MD_BYTES,
    MAX_SKILL_TOTAL_BYTES,
    RESOURCE_DIRS,
    SKILL_FILE,
    is_agent_name,
)
from .manifest import MANIFEST_FILE, PackAgentEntry, PackManifest, PackSkillEntry
from .model import (
    AGENT_KEY,
    BOOKKEEPING_KEYS,
    INVOCATIONS_KEY,
    ITERATION_KEY,
    PARENT_HASH_KEY,
    PROVENANCE_KEY,
    UTILITY_KEY,
    Skill,
    check_name,
    check_resource_path,
    slugify_name,
)
from .pack import PACK_SKILLS_DIR, check_pack_destination, export_pack, import_pack, load_libraries
from .render import SKILL_TOOL_NAME, render_index, render_inline
from .text import approx_tokens, shown
from .validate import PathReport, inspect_path, validate_path

if TYPE_CHECKING:
    from .tool import LoadSkillArgs, SkillInvocation, SkillUseRecorder, make_skill_tool

_TOOL_NAMES = frozenset({"LoadSkillArgs", "SkillInvocation", "SkillUseRecorder", "make_skill_tool"})

__all__ = [
    "AGENT_KEY",
    "BOOKKEEPING_KEYS",
    "INVOCATIONS_KEY",
    "ITERATION_KEY",
    "MANIFEST_FILE",
    "MAX_COMPATIBILITY_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_RESOURCE_BYTES",
    "MAX_RESOURCE_DEPTH",
    "MAX_SKILL_FILES",
    "MAX_SKILL_MD_BYTES",
    "MAX_SKILL_TOTAL_BYTES",
    "PACK_SKILLS_DIR",
    "PARENT_HASH_KEY",
    "PROVENANCE_KEY",
    "RESOURCE_DIRS",
    "SKILL_FILE",
    "SKILL_TOOL_NAME",
    "UTILITY_KEY",
    "Boundary",
    "FileWriter",
    "LoadSkillArgs",
    "PackAgentEntry",
    "PackManifest",
    "PackSkillEntry",
    "PathReport",
    "Skill",
    "SkillInvocation",
    "SkillLibrary",
    "SkillUseRecorder",
    "approx_tokens",
    "check_name",
    "check_pack_destination",
    "check_resource_path",
    "durable_write",
    "export_pack",
    "import_pack",
    "inspect_path",
    "is_agent_name",
    "load_libraries",
    "make_skill_tool",
    "recover_leftovers",
    "render_index",
    "render_inline",
    "shown",
    "slugify_name",
    "validate_path",
]


def __getattr__(name: str) -> Any:
    # The `load_skill` tool needs langchain (about a second to import); reading, validating and
    # shipping libraries (`grse skills`, packs) do not.
    if name not in _TOOL_NAMES:
        raise AttributeError(f"module 'grse_graph.skills' has no attribute {name!r}")
    return getattr(import_module("grse_graph.skills.tool"), name)
