"""SKILL.md skill packages (Agent Skills spec), per-agent libraries, rendering, tools, packs.

- `Skill`: one package (front matter, body, resources, `grse-*` bookkeeping in metadata).
- `SkillLibrary`: one agent's skills, immutable, sorted, limited, saved atomically.
- `render_inline` / `render_index` + `make_skill_tool` / `SkillUseRecorder`: giving a library to
  an agent in the prompt or through a `load_skill` tool.
- `export_pack` / `import_pack` / `load_libraries`: shipping libraries of a whole team.
- `validate_path` / `inspect_path`: checking anything on disk, all problems at once.
"""

from .files import FileWriter, durable_write
from .library import SkillLibrary
from .limits import (
    MAX_COMPATIBILITY_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    MAX_RESOURCE_BYTES,
    MAX_SKILL_MD_BYTES,
    RESOURCE_DIRS,
    SKILL_FILE,
)
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
    slugify_name,
)
from .pack import (
    MANIFEST_FILE,
    PackAgentEntry,
    PackManifest,
    PackSkillEntry,
    export_pack,
    import_pack,
    load_libraries,
)
from .render import SKILL_TOOL_NAME, render_index, render_inline
from .text import approx_tokens
from .tool import LoadSkillArgs, SkillInvocation, SkillUseRecorder, make_skill_tool
from .validate import PathReport, inspect_path, validate_path

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
    "MAX_SKILL_MD_BYTES",
    "PARENT_HASH_KEY",
    "PROVENANCE_KEY",
    "RESOURCE_DIRS",
    "SKILL_FILE",
    "SKILL_TOOL_NAME",
    "UTILITY_KEY",
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
    "durable_write",
    "export_pack",
    "import_pack",
    "inspect_path",
    "load_libraries",
    "make_skill_tool",
    "render_index",
    "render_inline",
    "slugify_name",
    "validate_path",
]
