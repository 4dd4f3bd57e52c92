"""Named limits of the skill package format (Agent Skills spec plus this project's size caps)."""

from __future__ import annotations

import re

SKILL_FILE = "SKILL.md"
RESOURCE_DIRS: tuple[str, ...] = ("references", "scripts", "assets")

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
MAX_SKILL_MD_BYTES = 64 * 1024
MAX_RESOURCE_BYTES = 1024 * 1024

# Agent Skills spec: lowercase letters, digits and single hyphens, no hyphen at either end.
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# Agent names become folder names inside packs, so they follow the same rule as skill names.
AGENT_PATTERN = NAME_PATTERN
