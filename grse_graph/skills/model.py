"""The `Skill` value: one Agent Skills package (SKILL.md plus optional resource files)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from grse_graph.errors import SkillError
from grse_graph.validation_text import describe_validation_error

from .files import FileWriter, durable_write, mark_executable
from .frontmatter import dump_front_matter, split_front_matter
from .limits import (
    MAX_COMPATIBILITY_CHARS,
    MAX_COUNT_DIGITS,
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    MAX_PATH_PART_BYTES,
    MAX_RESOURCE_BYTES,
    MAX_RESOURCE_DEPTH,
    MAX_SKILL_FILES,
    MAX_SKILL_MD_BYTES,
    MAX_SKILL_TOTAL_BYTES,
    NAME_PATTERN,
    SKILL_FILE,
    is_agent_name,
)
from .text import FRONT_MATTER_DELIMITER, forbidden_character, one_line, shown

# Evolution bookkeeping, stored as strings under `metadata` (the spec's only open field).
BOOKKEEPING_PREFIX = "grse-"
UTILITY_KEY = "grse-utility"
PROVENANCE_KEY = "grse-provenance"
INVOCATIONS_KEY = "grse-invocations"
ITERATION_KEY = "grse-iteration"
PARENT_HASH_KEY = "grse-parent-hash"
AGENT_KEY = "grse-agent"
BOOKKEEPING_KEYS = (
    AGENT_KEY,
    INVOCATIONS_KEY,
    ITERATION_KEY,
    PARENT_HASH_KEY,
    PROVENANCE_KEY,
    UTILITY_KEY,
)

FRONT_MATTER_FIELDS = (
    "name",
    "description",
    "license",
    "compatibility",
    "allowed-tools",
    "metadata",
)

_HASH_PATTERN = re.compile(r"^[0-9a-f]{64}$")
_INT_PATTERN = re.compile(r"^(0|[1-9][0-9]*)$")


def _check_text(value: str, field: str, *, front_matter: bool) -> str:
    bad = forbidden_character(value)
    if bad is not None:
        raise ValueError(f"{field} contains the forbidden character {bad!r}")
    if front_matter and FRONT_MATTER_DELIMITER in value:
        raise ValueError(f"{field} contains '---', which ends the front matter in SKILL.md readers")
    return value


def check_name(name: str) -> str:
    """Return `name` if it is a valid skill name (Agent Skills spec), else raise ValueError."""
    if len(name) > MAX_NAME_CHARS or not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"invalid name {name!r}: use 1-{MAX_NAME_CHARS} lowercase letters, digits and single "
            "hyphens, not starting or ending with a hyphen"
        )
    return name


def slugify_name(text: str) -> str:
    """A valid skill name derived from free text ("Answer Formatting!" -> "answer-formatting").

    Raises ValueError when nothing usable is left.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:MAX_NAME_CHARS].strip("-")
    return check_name(slug)


def check_resource_path(path: str) -> str:
    """Return `path` if it may name a file inside a skill folder, else raise ValueError.

    Any relative path is allowed (the spec lets a skill carry files such as `forms.md`,
    `LICENSE.txt` or `helper.py` next to SKILL.md) except: SKILL.md itself, absolute paths,
    `.`/`..`/empty parts, hidden parts (reserved for editors and interrupted saves),
    backslashes, forbidden characters, parts over 255 bytes, nesting over the depth cap.
    """
    malformed = f"resource path {path!r} escapes the skill folder or is malformed"
    if not path or "\\" in path or path.startswith("/") or "\x00" in path:
        raise ValueError(malformed)
    if "\n" in path or "\t" in path:
        raise ValueError(f"resource path {path!r} contains a forbidden character (newline, tab)")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(malformed)
    _check_text(path, f"resource path {path!r}", front_matter=False)
    if path == SKILL_FILE:
        raise ValueError(f"resource path {path!r} is the skill file itself")
    if any(part.startswith(".") for part in parts):
        raise ValueError(f"resource path {path!r} has a hidden part (names starting with '.')")
    if len(parts) > MAX_RESOURCE_DEPTH + 1:
        raise ValueError(f"resource path {path!r} is nested deeper than {MAX_RESOURCE_DEPTH}")
    if any(len(part.encode("utf-8")) > MAX_PATH_PART_BYTES for part in parts):
        raise ValueError(f"resource path {path!r} has a part over {MAX_PATH_PART_BYTES} bytes")
    return path


def _check_bookkeeping(key: str, value: str) -> None:
    problem: str | None = None
    if key == UTILITY_KEY:
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and -1.0 <= number <= 1.0):
            problem = "must be a number in [-1, 1]"
    elif key in (INVOCATIONS_KEY, ITERATION_KEY):
        if not _INT_PATTERN.fullmatch(value):
            problem = "must be a non-negative whole number"
        elif len(value) > MAX_COUNT_DIGITS:
            problem = f"has {len(value)} digits, over the limit of {MAX_COUNT_DIGITS}"
    elif key == PARENT_HASH_KEY:
        if not _HASH_PATTERN.fullmatch(value):
            problem = "must be a 64-character lowercase sha256 hex digest"
    elif key == AGENT_KEY:
        if not is_agent_name(value):
            problem = "must be an agent name (lowercase letters, digits, single hyphens)"
    elif key == PROVENANCE_KEY:
        if not value.strip() or "\n" in value:
            problem = "must be one non-empty line"
    else:
        problem = f"is not a known bookkeeping key (known: {', '.join(BOOKKEEPING_KEYS)})"
    if problem is not None:
        # The formatter names the field (`metadata: grse-utility=...`); the key says which entry.
        raise ValueError(f"{key}={_clipped(value)} {problem}")


def _clipped(value: str, limit: int = 40) -> str:
    """`value` quoted for an error line, its middle cut when long (a 5000-digit value would
    bury the problem)."""
    if len(value) <= limit:
        return repr(value)
    half = limit // 2
    return repr(f"{value[:half]}...{value[-half:]}")


class Skill(BaseModel):
    """One skill package: SKILL.md front matter and body, plus resource files.

    Values are immutable; the `with_*` helpers return changed copies (validated again).
    Evolution bookkeeping lives in `metadata` under the `grse-*` keys with typed accessors.
    `resources` maps paths relative to the skill folder (references/, scripts/, assets/, or any
    other file next to SKILL.md, as the spec allows) to file contents and travels with the
    skill on save, export and copy; `executables` names the resources whose file is executable
    (a `scripts/run.sh` an agent runs), so that bit survives the same trips.

    Direct construction raises pydantic's `ValidationError`; `Skill.build`, `Skill.parse` and
    `Skill.load` raise a one-line `SkillError` instead.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )

    name: str
    description: str
    body: str = ""
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: list[str] = []
    metadata: dict[str, str] = {}
    resources: dict[str, bytes] = {}
    executables: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("description")
    @classmethod
    def _valid_description(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("description is empty (say what the skill does and when to use it)")
        if len(value) > MAX_DESCRIPTION_CHARS:
            raise ValueError(
                f"description is {len(value)} characters, over the limit of {MAX_DESCRIPTION_CHARS}"
            )
        return _check_text(value, "description", front_matter=True)

    @field_validator("body")
    @classmethod
    def _canonical_body(cls, value: str) -> str:
        # Bodies are stored in canonical form (\n line ends, no surrounding blank space) so that
        # writing and re-reading a skill gives back exactly the same value.
        value = value.replace("\r\n", "\n").replace("\r", "\n").strip()
        return _check_text(value, "body", front_matter=False)

    @field_validator("license")
    @classmethod
    def _valid_license(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("license is empty (omit it instead)")
        return value if value is None else _check_text(value, "license", front_matter=True)

    @field_validator("compatibility")
    @classmethod
    def _valid_compatibility(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("compatibility is empty (omit it instead)")
        if len(value) > MAX_COMPATIBILITY_CHARS:
            raise ValueError(
                f"compatibility is {len(value)} characters, over the limit of "
                f"{MAX_COMPATIBILITY_CHARS}"
            )
        return _check_text(value, "compatibility", front_matter=True)

    @field_validator("allowed_tools")
    @classmethod
    def _valid_tools(cls, value: list[str]) -> list[str]:
        for tool in value:
            # The spec writes allowed-tools as one space-separated string.
            if not tool or any(c.isspace() for c in tool):
                raise ValueError(f"allowed-tools entry {tool!r} is empty or contains whitespace")
            _check_text(tool, "allowed-tools", front_matter=True)
        if len(set(value)) != len(value):
            raise ValueError("allowed-tools lists a tool twice")
        return value

    @field_validator("metadata")
    @classmethod
    def _valid_metadata(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not key.strip():
                raise ValueError("metadata has an empty key")
            _check_text(key, f"metadata key {key!r}", front_matter=True)
            _check_text(item, f"metadata {key!r}", front_matter=True)
            if key.startswith(BOOKKEEPING_PREFIX):
                _check_bookkeeping(key, item)
        return value

    @field_validator("resources")
    @classmethod
    def _valid_resources(cls, value: dict[str, bytes]) -> dict[str, bytes]:
        for path, data in value.items():
            check_resource_path(path)
            if len(data) > MAX_RESOURCE_BYTES:
                raise ValueError(
                    f"resource {path!r} is {len(data)} bytes, over the limit of "
                    f"{MAX_RESOURCE_BYTES} bytes"
                )
        if len(value) > MAX_SKILL_FILES:
            raise ValueError(f"{len(value)} resource files, over the limit of {MAX_SKILL_FILES}")
        total = sum(len(data) for data in value.values())
        if total > MAX_SKILL_TOTAL_BYTES:
            raise ValueError(
                f"resources total {total} bytes, over the limit of {MAX_SKILL_TOTAL_BYTES} bytes"
            )
        paths = set(value)
        for path in paths:
            parts = path.split("/")
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in paths:
                    raise ValueError(f"resource {path!r} is inside another resource file")
        return value

    @field_validator("executables")
    @classmethod
    def _canonical_executables(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Sorted and unique, so equal skills compare, hash and serialise the same.
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _executables_are_resources(self) -> Skill:
        for path in self.executables:
            if path not in self.resources:
                raise ValueError(f"executable {path!r} is not one of the skill's resource files")
        return self

    @model_validator(mode="after")
    def _fits_size_limit(self) -> Skill:
        size = len(self.to_markdown().encode("utf-8"))
        if size > MAX_SKILL_MD_BYTES:
            raise ValueError(
                f"SKILL.md would be {size} bytes, over the limit of {MAX_SKILL_MD_BYTES} bytes"
            )
        return self

    def __hash__(self) -> int:
        # Consistent with equality (all fields), usable in sets and as dict keys.
        return hash((self.to_markdown(), tuple(sorted(self.resources.items())), self.executables))

    # ----- construction ------------------------------------------------------------------

    @classmethod
    def build(cls, source: str = "<skill>", **fields: Any) -> Skill:
        """Construct a skill, turning validation failures into a one-line `SkillError`.

        `source` names where the values came from (a file, an operator) in the message.
        """
        try:
            return cls(**fields)
        except ValidationError as error:
            raise SkillError(validation_message(error, shown(source))) from None

    @classmethod
    def parse(
        cls,
        text: str,
        source: str,
        resources: Mapping[str, bytes] | None = None,
        executables: Iterable[str] = (),
    ) -> Skill:
        """Parse SKILL.md text. `source` (usually the file path) prefixes every error message;
        `executables` names the resources whose file on disk is executable."""
        size = len(text.encode("utf-8", errors="surrogatepass"))
        if size > MAX_SKILL_MD_BYTES:
            raise SkillError(
                f"{source}: SKILL.md is {size} bytes, over the limit of {MAX_SKILL_MD_BYTES} bytes"
            )
        data, body = split_front_matter(text, source)
        fields = _front_matter_to_fields(data, source)
        return cls.build(
            source,
            body=body,
            resources=dict(resources or {}),
            executables=tuple(executables),
            **fields,
        )

    @classmethod
    def load(cls, directory: Path | str) -> Skill:
        """Read a skill folder (SKILL.md plus every other file in it, hidden ones excepted).

        The folder name must equal the skill name; symlinks must stay inside the folder.
        Leftovers of an interrupted save next to the folder are recovered first.
        """
        from .storage import load_skill

        return load_skill(Path(directory))

    # ----- writing -----------------------------------------------------------------------

    def front_matter(self) -> dict[str, Any]:
        """The front-matter mapping in the fixed key order used on disk."""
        fields: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.license is not None:
            fields["license"] = self.license
        if self.compatibility is not None:
            fields["compatibility"] = self.compatibility
        if self.allowed_tools:
            fields["allowed-tools"] = " ".join(self.allowed_tools)
        if self.metadata:
            fields["metadata"] = dict(sorted(self.metadata.items()))
        return fields

    def to_markdown(self) -> str:
        """The SKILL.md text: YAML front matter between `---` lines, a blank line, the body."""
        text = f"---\n{dump_front_matter(self.front_matter())}---\n"
        if self.body:
            text += f"\n{self.body}\n"
        return text

    def save(self, directory: Path | str, *, writer: FileWriter = durable_write) -> None:
        """Write this skill to its folder (whose name must equal the skill name), atomically.

        An existing folder that already holds an equal skill is left untouched, byte for byte.
        Files under references/, scripts/, assets/ that the skill no longer has are removed;
        any other file on disk the skill does not carry (a user's `notes.txt`), a hidden entry,
        or a folder that does not read cleanly makes the save refuse instead of deleting it.
        `writer` writes each file before it goes live (inject a failing one to test crashes).
        """
        from .storage import save_skill

        save_skill(self, Path(directory), writer)

    def write_files(self, directory: Path, writer: FileWriter = durable_write) -> None:
        """Write SKILL.md and resources into an existing folder that is not yet live."""
        writer(directory / SKILL_FILE, self.to_markdown().encode("utf-8"))
        self.write_resources(directory, writer)

    def write_resources(self, directory: Path, writer: FileWriter = durable_write) -> None:
        """Write the resource files (executables marked so) into a folder not yet live."""
        for path, data in sorted(self.resources.items()):
            writer(directory / path, data)
        for path in self.executables:
            mark_executable(directory / path)

    # ----- identity ----------------------------------------------------------------------

    def content_hash(self) -> str:
        """sha256 of everything an agent sees or runs: name, description, body, license,
        compatibility, allowed tools, non-bookkeeping metadata and resources.

        The `grse-*` bookkeeping keys are excluded, so updating utility or counts keeps the hash
        (and `grse-parent-hash` can name the parent's hash without a cycle).
        """
        payload = {
            "name": self.name,
            "description": self.description,
            "body": self.body,
            "license": self.license,
            "compatibility": self.compatibility,
            "allowed_tools": self.allowed_tools,
            "metadata": {
                k: v for k, v in self.metadata.items() if not k.startswith(BOOKKEEPING_PREFIX)
            },
            "resources": {k: hashlib.sha256(v).hexdigest() for k, v in self.resources.items()},
        }
        if self.executables:
            # Whether a script runs is part of what the agent runs. Only added when set, so
            # the hashes of skills without executables (every pack written so far) stay put.
            payload["executables"] = list(self.executables)
        encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(encoded).hexdigest()

    # ----- bookkeeping accessors ---------------------------------------------------------

    @property
    def utility(self) -> float | None:
        """The recorded utility in [-1, 1], or None when none was recorded."""
        value = self.metadata.get(UTILITY_KEY)
        return None if value is None else float(value)

    @property
    def provenance(self) -> str | None:
        """How the skill came to be (for example `seed`, `induced`, `refined`)."""
        return self.metadata.get(PROVENANCE_KEY)

    @property
    def invocations(self) -> int:
        """How often the skill was recorded as used (0 when never recorded)."""
        return int(self.metadata.get(INVOCATIONS_KEY, "0"))

    @property
    def iteration(self) -> int | None:
        """The training iteration that produced this version."""
        value = self.metadata.get(ITERATION_KEY)
        return None if value is None else int(value)

    @property
    def parent_hash(self) -> str | None:
        """`content_hash()` of the version this one was derived from."""
        return self.metadata.get(PARENT_HASH_KEY)

    @property
    def agent(self) -> str | None:
        """The agent that owns this skill."""
        return self.metadata.get(AGENT_KEY)

    def _with_meta(self, key: str, value: str | None) -> Skill:
        metadata = dict(self.metadata)
        if value is None:
            metadata.pop(key, None)
        else:
            metadata[key] = value
        return self.model_validate({**self._fields(), "metadata": metadata})

    def _fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in type(self).model_fields}

    def with_utility(self, utility: float | None) -> Skill:
        """A copy with the utility set (None removes it)."""
        return self._with_meta(UTILITY_KEY, None if utility is None else repr(float(utility)))

    def with_provenance(self, provenance: str | None) -> Skill:
        """A copy with the provenance set (None removes it)."""
        return self._with_meta(PROVENANCE_KEY, provenance)

    def with_invocations(self, count: int) -> Skill:
        """A copy with the invocation count set."""
        return self._with_meta(INVOCATIONS_KEY, str(count))

    def with_iteration(self, iteration: int | None) -> Skill:
        """A copy with the producing iteration set (None removes it)."""
        return self._with_meta(ITERATION_KEY, None if iteration is None else str(iteration))

    def without_bookkeeping(self) -> Skill:
        """A copy without the `grse-*` training bookkeeping (what ships in a production pack)."""
        metadata = {k: v for k, v in self.metadata.items() if not k.startswith(BOOKKEEPING_PREFIX)}
        return self.model_validate({**self._fields(), "metadata": metadata})

    def with_body(self, body: str) -> Skill:
        """A copy with a new body (validated)."""
        return self.model_validate({**self._fields(), "body": body})

    def with_description(self, description: str) -> Skill:
        """A copy with a new description (validated)."""
        return self.model_validate({**self._fields(), "description": description})

    def derive(self, **changes: Any) -> Skill:
        """A validated copy with any fields changed, recording this version as the parent."""
        fields = {**self._fields(), **changes}
        metadata = dict(fields.get("metadata") or {})
        metadata[PARENT_HASH_KEY] = self.content_hash()
        fields["metadata"] = metadata
        return self.model_validate(fields)


# ----- helpers shared with the library and validation code -------------------------------


FRONT_MATTER_NAMES = MappingProxyType({"allowed_tools": "allowed-tools"})
"""Fields whose SKILL.md front-matter key differs from the model's field name."""


def validation_message(error: ValidationError, source: str) -> str:
    """Every error of `error` on one line, prefixed with `source`, each naming its field as
    the front matter does (untrusted values made safe for a terminal)."""
    return shown(one_line(f"{source}: {describe_validation_error(error, FRONT_MATTER_NAMES)}"))


def _front_matter_to_fields(data: dict[Any, Any], source: str) -> dict[str, Any]:
    unknown = sorted(str(key) for key in data if key not in FRONT_MATTER_FIELDS)
    if unknown:
        raise SkillError(
            f"{source}: unknown front-matter field {unknown[0]!r} "
            f"(allowed: {', '.join(FRONT_MATTER_FIELDS)})"
        )
    for required in ("name", "description"):
        if required not in data:
            raise SkillError(f"{source}: front matter is missing the required field {required!r}")
    fields: dict[str, Any] = {}
    for key in ("name", "description", "license", "compatibility"):
        if key in data:
            if not isinstance(data[key], str):
                raise SkillError(f"{source}: front-matter field {key!r} must be a single string")
            fields[key] = data[key]
    tools = data.get("allowed-tools")
    if tools is not None:
        if isinstance(tools, str):
            fields["allowed_tools"] = tools.split()
        elif isinstance(tools, list) and all(isinstance(t, str) for t in tools):
            fields["allowed_tools"] = list(tools)
        else:
            raise SkillError(f"{source}: allowed-tools must be a space-separated string or a list")
    metadata = data.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise SkillError(f"{source}: metadata must map strings to strings")
        fields["metadata"] = metadata
    return fields
