"""Named limits of the skill package format (Agent Skills spec plus this project's size caps)."""

from __future__ import annotations

import re

SKILL_FILE = "SKILL.md"
# The spec's optional folders. Files anywhere else in a skill folder are carried along too.
RESOURCE_DIRS: tuple[str, ...] = ("references", "scripts", "assets")

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
MAX_SKILL_MD_BYTES = 64 * 1024
MAX_RESOURCE_BYTES = 1024 * 1024
# Caps on one skill folder as a whole, so a hostile folder cannot make a reader spin or
# exhaust memory: total bytes of its resources, number of files, folder nesting below it.
MAX_SKILL_TOTAL_BYTES = 8 * 1024 * 1024
MAX_SKILL_FILES = 256
MAX_RESOURCE_DEPTH = 8
MAX_PATH_PART_BYTES = 255
# Other bounded inputs: a pack's manifest, entries per folder, YAML nesting in front matter.
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_FOLDER_ENTRIES = 4096
MAX_YAML_DEPTH = 16
# Bookkeeping counts (`grse-invocations`, `grse-iteration`) are read back with `int()`: capped
# far below Python's int-from-text limit (4300 digits) and within a signed 64-bit integer, so
# every reader (Python, JSON tools) can hold them.
MAX_COUNT_DIGITS = 18

# Agent Skills spec: lowercase letters, digits and single hyphens, no hyphen at either end.
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# Agent names become folder names inside packs, so they follow the same rule as skill names
# (and the same length cap: check with `is_agent_name`).
AGENT_PATTERN = NAME_PATTERN


def is_agent_name(name: str) -> bool:
    """True when `name` is a valid agent name (same rule and length cap as skill names)."""
    return len(name) <= MAX_NAME_CHARS and AGENT_PATTERN.fullmatch(name) is not None
